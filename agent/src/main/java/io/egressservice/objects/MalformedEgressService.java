package io.egressservice.objects;

import io.fabric8.kubernetes.model.annotation.Group;
import io.fabric8.kubernetes.model.annotation.Kind;
import io.fabric8.kubernetes.model.annotation.Plural;
import io.fabric8.kubernetes.model.annotation.Singular;
import io.fabric8.kubernetes.model.annotation.Version;
import java.util.Objects;
import org.ovn.k8s.v1.EgressService;

/**
 * An EgressService whose spec could not be read into the model (it fails the CRD's schema: {@code sourceIPBy:
 * Bogus}, {@code nodeSelector} a string, {@code network} an object, which an API server without the schema,
 * or with an older one, stores). It keeps the object's metadata and, when readable, its status, so it is
 * known by name and refused on its own; its spec is absent and must never be acted on or written back.
 */
@Group("k8s.ovn.org")
@Version("v1")
@Kind("EgressService")
@Singular("egressservice")
@Plural("egressservices")
public final class MalformedEgressService extends EgressService {
  private static final long serialVersionUID = 1L;

  private final String problem;

  public MalformedEgressService(String problem) {
    this.problem = Objects.requireNonNull(problem);
  }

  /** What could not be read, e.g. {@code spec.sourceIPBy: 'Bogus' is not one of LoadBalancerIP, Network}. */
  public String problem() {
    return problem;
  }
}
