package io.egressservice.cluster;

import io.egressservice.allocator.AllocatorConfig;
import io.egressservice.testbed.AgentProcess;
import io.egressservice.testbed.Cluster;
import io.fabric8.kubernetes.api.model.coordination.v1.Lease;
import java.util.Optional;

/** Who leads the allocators the agents run: the Lease's holder, as they wrote it. */
public final class LeaseHolder {
  private static final String AGENT_PREFIX = "egress-service-agent-";

  private LeaseHolder() {}

  /** The Lease's holder identity (the agent's pod name), if any. */
  public static Optional<String> of(Cluster c) {
    Lease lease = c.api().client().leases().inNamespace(AgentProcess.LEASE_NAMESPACE)
        .withName(AllocatorConfig.DEFAULT_LEASE_NAME).get();
    return lease == null || lease.getSpec() == null ? Optional.empty()
        : Optional.ofNullable(lease.getSpec().getHolderIdentity()).filter(h -> !h.isEmpty());
  }

  /** The node whose agent holds the Lease, if any. */
  public static Optional<String> node(Cluster c) {
    return of(c).filter(h -> h.startsWith(AGENT_PREFIX)).map(h -> h.substring(AGENT_PREFIX.length()));
  }
}
