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
  @Mixin TrustedEndpointManagersOption trustedEndpointManagers = new TrustedEndpointManagersOption();

  @FromEnvironment
  @Option(names = "--cluster-cidr", split = ",",
      description = "Pod network(s), in addition to the Nodes' spec.podCIDRs. Repeatable.")
  List<String> clusterCidrs = new ArrayList<>();

  @FromEnvironment
  @Option(names = "--service-cidr", split = ",",
      description = "Service network(s) (ClusterIPs). Repeatable.")
  List<String> serviceCidrs = new ArrayList<>();

  @FromEnvironment
  @Option(names = "--exclude-cidr", split = ",",
      description = "Other in-cluster destinations, e.g. OVN-Kubernetes' masquerade subnet, or other nodes' addresses"
          + " their Node objects do not list. Repeatable.")
  List<String> excludeCidrs = new ArrayList<>();

  @FromEnvironment
  @Option(names = "--no-in-cluster-exclusion", negatable = false,
      defaultValue = "false",
      description = "Do not throw in-cluster destinations back from the service tables, nor keep them out of SNAT.")
  boolean noInClusterExclusion;

  @FromEnvironment
  @Option(names = "--rule-mode", defaultValue = "source",
      description = "source: one ip rule per source address (as OVN-Kubernetes). mark: nftables marks the sources, one"
          + " 'ip rule fwmark' per network (O(1) per packet). Default ${DEFAULT-VALUE}.")
  String ruleMode;

  @FromEnvironment
  @Option(names = "--mark-mask", defaultValue = "0x3f000000",
      description = "Mark mode: the packet-mark bits the agent may use (contiguous; default ${DEFAULT-VALUE}, clear of"
          + " kube-proxy 0x4000/0x8000, OVN-Kubernetes 0x3f0, Cilium 0xf00, Istio 0x539; Calico's default 0xffff0000"
          + " overlaps it).")
  String markMask;

  @FromEnvironment
  @Option(names = "--ovn-masquerade-ips", split = ",",
      description = "OVN-Kubernetes' ETP=Local masquerade IPs (its V4/V6HostETPLocalMasqueradeIP: the .3 of its"
          + " masquerade subnets, e.g. 169.254.169.3,fd69::3), at most one per family. With them, replies of"
          + " externalTrafficPolicy: Local Services on its local gateway path follow the network too.")
  List<String> ovnMasqueradeIps = new ArrayList<>();

  @FromEnvironment
  @Option(names = "--remote-endpoints", defaultValue = "steer",
      description = "steer: a node that is not status.host sends its local endpoints of a LoadBalancerIP service to the"
          + " host over the agent's device (egress-vx), so they leave there with the LB IP. report: leave them and"
          + " report them (OVN-Kubernetes reroutes them itself). Default ${DEFAULT-VALUE}.")
  String remoteEndpoints;

  @FromEnvironment
  @Option(names = "--steer-table", defaultValue = "7000",
      description = "First of the 256 routing tables the agent owns for steering (one per host node). Default"
          + " ${DEFAULT-VALUE}.")
  long steerTable;

  @FromEnvironment
  @Option(names = "--steer-port", defaultValue = "4799",
      description = "UDP port of the steering device (VXLAN-GPE), the same on every node; not 4789 or 8472, which"
          + " CNIs use. Default ${DEFAULT-VALUE}.")
  int steerPort;

  @FromEnvironment
  @Option(names = "--no-host", defaultValue = "drop",
      description = "What happens to this node's endpoints of a LoadBalancerIP service without a host (status.host"
          + " empty: the host died, or none is eligible): drop their traffic out of the cluster, counted per service"
          + " (the pods never leave with another source), or pass it (it leaves as if not opted in). Default"
          + " ${DEFAULT-VALUE}.")
  String noHost;

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
          .withSteering(steering).withEndpointTrust(trustedEndpointManagers.toTrust()));
    } catch (IllegalArgumentException e) {
      throw new Main.UserError(e.getMessage());
    }
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
