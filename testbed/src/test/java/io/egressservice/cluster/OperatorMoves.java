package io.egressservice.cluster;

import io.egressservice.plan.EgressServiceInfo;
import io.egressservice.testbed.ApiServer;
import io.egressservice.testbed.Cluster;
import java.util.Map;
import org.ovn.k8s.v1.EgressService;

/** The operator's side of a planned move: cordoning a node, and whether a make-before-break move is under way. */
public final class OperatorMoves {
  private OperatorMoves() {}

  /** Cordons ({@code on}) or uncordons the node, as {@code kubectl cordon/uncordon} does. */
  public static void cordon(Cluster c, String node, boolean on) {
    c.api().client().nodes().withName(node).edit(n -> {
      n.getSpec().setUnschedulable(on ? Boolean.TRUE : null);
      return n;
    });
  }

  /** Whether the EgressService still carries the {@code also-receive} annotation (the old host has not let go). */
  public static boolean underWay(Cluster c, String service) {
    EgressService es = c.api().client().resources(EgressService.class).inNamespace(ApiServer.NAMESPACE)
        .withName(service).get();
    Map<String, String> a = es == null ? null : es.getMetadata().getAnnotations();
    return a != null && a.get(EgressServiceInfo.ALSO_RECEIVE_ANNOTATION) != null;
  }
}
