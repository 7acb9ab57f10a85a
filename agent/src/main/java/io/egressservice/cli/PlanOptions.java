package io.egressservice.cli;

import io.egressservice.ip.IpPrefix;
import io.egressservice.model.EndpointTrust;
import io.egressservice.model.PlanConfig;
import io.egressservice.model.RemoteEndpoints;
import io.egressservice.model.RuleMode;
import io.egressservice.model.SteeringConfig;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * The flags that shape the plan, shared by {@code run}, {@code plan} and {@code apply}. Each also
 * reads from {@code EGRESS_AGENT_<FLAG>} (lists comma-separated), which is how the DaemonSet sets them.
 */
public final class PlanOptions {
  @Mixin OwnershipOptions ownership = new OwnershipOptions();
  @Mixin MarkBudgetOptions markBudget = new MarkBudgetOptions();

  @Option(names = "--cluster-cidr", split = ",", defaultValue = "${env:EGRESS_AGENT_CLUSTER_CIDR}",
      description = "Pod network(s), in addition to the Nodes' spec.podCIDRs. Repeatable.")
  List<String> clusterCidrs = new ArrayList<>();

  @Option(names = "--service-cidr", split = ",", defaultValue = "${env:EGRESS_AGENT_SERVICE_CIDR}",
      description = "Service network(s) (ClusterIPs). Repeatable.")
  List<String> serviceCidrs = new ArrayList<>();

  @Option(names = "--exclude-cidr", split = ",", defaultValue = "${env:EGRESS_AGENT_EXCLUDE_CIDR}",
      description = "Other in-cluster destinations, e.g. OVN-Kubernetes' masquerade subnet, or other nodes' addresses"
          + " their Node objects do not list. Repeatable.")
  List<String> excludeCidrs = new ArrayList<>();

  @Option(names = "--no-in-cluster-exclusion", negatable = false,
      defaultValue = "${env:EGRESS_AGENT_NO_IN_CLUSTER_EXCLUSION:-false}",
      description = "Do not throw in-cluster destinations back from the service tables, nor keep them out of SNAT.")
  boolean noInClusterExclusion;

  @Option(names = "--rule-mode", defaultValue = "${env:EGRESS_AGENT_RULE_MODE:-source}",
      description = "source: one ip rule per source address (as OVN-Kubernetes). mark: nftables marks the sources, one"
          + " 'ip rule fwmark' per network (O(1) per packet). Default ${DEFAULT-VALUE}.")
  String ruleMode;

  @Option(names = "--mark-mask", defaultValue = "${env:EGRESS_AGENT_MARK_MASK:-0x3f000000}",
      description = "Mark mode: the packet-mark bits the agent may use (contiguous; default ${DEFAULT-VALUE}, clear of"
          + " kube-proxy 0x4000/0x8000, OVN-Kubernetes 0x3f0, Cilium 0xf00, Istio 0x539; Calico's default 0xffff0000"
          + " overlaps it).")
  String markMask;

  @Option(names = "--ovn-masquerade-ips", split = ",", defaultValue = "${env:EGRESS_AGENT_OVN_MASQUERADE_IPS}",
      description = "OVN-Kubernetes' ETP=Local masquerade IPs (its V4/V6HostETPLocalMasqueradeIP: the .3 of its"
          + " masquerade subnets, e.g. 169.254.169.3,fd69::3), at most one per family. With them, replies of"
          + " externalTrafficPolicy: Local Services on its local gateway path follow the network too.")
  List<String> ovnMasqueradeIps = new ArrayList<>();

  @Option(names = "--remote-endpoints", defaultValue = "${env:EGRESS_AGENT_REMOTE_ENDPOINTS:-steer}",
      description = "steer: a node that is not status.host sends its local endpoints of a LoadBalancerIP service to the"
          + " host over the agent's device (egress-vx), so they leave there with the LB IP. report: leave them and"
          + " report them (OVN-Kubernetes reroutes them itself). Default ${DEFAULT-VALUE}.")
  String remoteEndpoints;

  @Option(names = "--steer-table", defaultValue = "${env:EGRESS_AGENT_STEER_TABLE:-7000}",
      description = "First of the 256 routing tables the agent owns for steering (one per host node). Default"
          + " ${DEFAULT-VALUE}.")
  long steerTable;

  @Option(names = "--steer-port", defaultValue = "${env:EGRESS_AGENT_STEER_PORT:-4799}",
      description = "UDP port of the steering device (VXLAN-GPE), the same on every node; not 4789 or 8472, which"
          + " CNIs use. Default ${DEFAULT-VALUE}.")
  int steerPort;

  @Option(names = "--no-host", defaultValue = "${env:EGRESS_AGENT_NO_HOST:-drop}",
      description = "What happens to this node's endpoints of a LoadBalancerIP service without a host (status.host"
          + " empty: the host died, or none is eligible): drop their traffic out of the cluster, counted per service"
          + " (the pods never leave with another source), or pass it (it leaves as if not opted in). Default"
          + " ${DEFAULT-VALUE}.")
  String noHost;
  @Option(names = "--trusted-endpoint-managers", split = ",",
      defaultValue = "${env:EGRESS_AGENT_TRUSTED_ENDPOINT_MANAGERS}",
      description = "EndpointSlice managers (label endpointslice.kubernetes.io/managed-by) whose endpoints are taken,"
          + " in addition to Kubernetes' EndpointSlice controller for Services with a selector: e.g."
          + " endpointslicemirroring-controller.k8s.io (hand-written Endpoints of selector-less Services) or a load"
          + " balancer's controller. Repeatable.")
  List<String> trustedEndpointManagers = new ArrayList<>();

  /** Validates the flags into a {@link PlanConfig}; a bad value is a {@link Main.UserError}. */
  public PlanConfig toConfig() {
    try {
      ownership.validate();
      RuleMode mode = RuleMode.fromFlag(ruleMode);
      long mask;
      try {
        String m = markMask.trim().toLowerCase(java.util.Locale.ROOT);
        mask = m.startsWith("0x") ? Long.parseLong(m.substring(2), 16) : Long.parseLong(m);
      } catch (NumberFormatException e) {
        throw new Main.UserError("--mark-mask '" + markMask + "' is not a number (e.g. 0x3f000000)");
      }
      SteeringConfig steering =
          new SteeringConfig(RemoteEndpoints.fromFlag(remoteEndpoints.trim()), steerTable, steerPort,
              io.egressservice.model.NoHost.fromFlag(noHost));
      return markBudget.applyTo(new PlanConfig(ownership.priority, ownership.ruleProtocol, prefixes("--cluster-cidr", clusterCidrs),
          prefixes("--service-cidr", serviceCidrs), prefixes("--exclude-cidr", excludeCidrs), !noInClusterExclusion,
          mode, mask).withEtpLocalMasqueradeIps(prefixes("--ovn-masquerade-ips", ovnMasqueradeIps))
          .withSteering(steering).withEndpointTrust(endpointTrust()));
    } catch (IllegalArgumentException e) {
      throw new Main.UserError(e.getMessage());
    }
  }

  private EndpointTrust endpointTrust() {
    return endpointTrust(trustedEndpointManagers);
  }

  /** {@code --trusted-endpoint-managers} (also the allocator's): label values; a bad one is a user error. */
  static EndpointTrust endpointTrust(List<String> trustedEndpointManagers) {
    java.util.Set<String> managers = new java.util.TreeSet<>();
    for (String m : trustedEndpointManagers) {
      if (m == null || m.isBlank()) {
        continue;
      }
      String name = m.trim();
      if (!name.matches("[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?") || name.length() > 63) {
        throw new Main.UserError("--trusted-endpoint-managers: '" + name + "' is not a label value (the"
            + " endpointslice.kubernetes.io/managed-by of the slices to trust, e.g."
            + " endpointslicemirroring-controller.k8s.io)");
      }
      managers.add(name);
    }
    return new EndpointTrust(managers);
  }

  private static List<IpPrefix> prefixes(String flag, List<String> values) {
    List<IpPrefix> out = new ArrayList<>();
    for (String v : values) {
      if (v == null || v.isBlank()) {
        continue;
      }
      try {
        out.add(IpPrefix.parse(v));
      } catch (IllegalArgumentException e) {
        throw new Main.UserError(flag + ": " + e.getMessage());
      }
    }
    return out;
  }
}
