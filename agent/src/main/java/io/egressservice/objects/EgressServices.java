package io.egressservice.objects;

import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceSpec;
import org.ovn.k8s.v1.EgressServiceStatus;

/** Builds EgressService objects (the generated model has setters, no builder). */
public final class EgressServices {
  private EgressServices() {}

  /** An EgressService with the given spec and {@code status.host} ("" for not allocated, "ALL" for Network). */
  public static EgressService of(String namespace, String name, EgressServiceSpec.SourceIPBy mode, String network,
      String host) {
    EgressService es = new EgressService();
    es.setMetadata(new ObjectMetaBuilder().withName(name).withNamespace(namespace).build());
    EgressServiceSpec spec = new EgressServiceSpec();
    spec.setSourceIPBy(mode);
    spec.setNetwork(network);
    es.setSpec(spec);
    EgressServiceStatus status = new EgressServiceStatus();
    status.setHost(host);
    es.setStatus(status);
    return es;
  }
}
