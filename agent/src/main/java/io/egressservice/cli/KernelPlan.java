package io.egressservice.cli;

import io.egressservice.dataplane.Dataplane;
import io.egressservice.dataplane.NodePlan;
import io.egressservice.model.PlanConfig;
import io.egressservice.objects.ClusterObjects;
import io.egressservice.objects.PlanInputs;
import io.egressservice.plan.Planner;
import java.util.TreeSet;
import org.ovn.k8s.v1.EgressService;

/** The one-shot commands' plan: the objects they loaded, planned with the facts of the node's kernel. */
public final class KernelPlan {
  private KernelPlan() {}

  public static NodePlan of(Dataplane dp, ClusterObjects objects, String node, PlanConfig config) {
    TreeSet<String> networks = new TreeSet<>();
    for (EgressService es : objects.egressServices()) {
      if (es.getSpec() != null && es.getSpec().getNetwork() != null) {
        networks.add(es.getSpec().getNetwork().trim());
      }
    }
    return dp.plan(networks, facts -> Planner.plan(PlanInputs.of(node, objects, facts.localAddresses(),
        facts.networks(), config, facts.existingMarks(), facts.existingSteerTables(), PlanInputs.Memo.none())));
  }
}
