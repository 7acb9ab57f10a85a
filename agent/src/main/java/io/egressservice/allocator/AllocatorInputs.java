package io.egressservice.allocator;

import io.egressservice.objects.MalformedEgressService;
import io.egressservice.objects.PlanInputs;
import io.egressservice.plan.SourceIpBy;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeAddress;
import io.fabric8.kubernetes.api.model.NodeCondition;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceSpec;

/** fabric8 models (with their nulls) to the allocator's null-free inputs. */
public final class AllocatorInputs {
  private AllocatorInputs() {}

  public static EgressServiceState egressService(EgressService es) {
    if (es instanceof MalformedEgressService malformed) {
      String host = es.getStatus() == null ? "" : es.getStatus().getHost();
      return new EgressServiceState(PlanInputs.ref(es), SourceIpBy.LOAD_BALANCER_IP, Optional.empty(), host,
          es.getStatus() != null, Optional.of(malformed.problem()), "", PlanInputs.egressService(es).created());
    }
    EgressServiceSpec spec = es.getSpec() == null ? new EgressServiceSpec() : es.getSpec();
    SourceIpBy mode = spec.getSourceIPBy() == EgressServiceSpec.SourceIPBy.NETWORK
        ? SourceIpBy.NETWORK : SourceIpBy.LOAD_BALANCER_IP;
    String host = es.getStatus() == null ? "" : es.getStatus().getHost();
    return new EgressServiceState(PlanInputs.ref(es), mode, Optional.ofNullable(spec.getNodeSelector()), host,
        es.getStatus() != null, Optional.empty(), spec.getNetwork(), PlanInputs.egressService(es).created());
  }

  public static NodeState node(Node n) {
    boolean ready = false;
    List<String> addresses = new ArrayList<>();
    if (n.getStatus() != null) {
      if (n.getStatus().getConditions() != null) {
        for (NodeCondition c : n.getStatus().getConditions()) {
          if ("Ready".equals(c.getType())) {
            ready = "True".equals(c.getStatus());
          }
        }
      }
      if (n.getStatus().getAddresses() != null) {
        for (NodeAddress a : n.getStatus().getAddresses()) {
          if ("InternalIP".equals(a.getType()) || "ExternalIP".equals(a.getType())) {
            addresses.add(a.getAddress());
          }
        }
      }
    }
    boolean unschedulable = n.getSpec() != null && Boolean.TRUE.equals(n.getSpec().getUnschedulable());
    boolean deleting = n.getMetadata().getDeletionTimestamp() != null;
    List<String> podCidrs = PlanInputs.node(n).podCidrs();
    return new NodeState(n.getMetadata().getName(), n.getMetadata().getLabels(), ready, unschedulable, deleting,
        addresses, podCidrs);
  }
}
