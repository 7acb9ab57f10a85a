package io.egressservice.explain;

import io.egressservice.ip.IpPrefix;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * The kernel's verdict for one pod's packet and, when the API was asked, who claims the pod and why; {@link
 * #sentence()} says it in one line.
 *
 * @param node the name of the node the kernel belongs to ("this node" when unknown)
 * @param api what the API says; {@link ApiClaims#NONE} when it was not asked
 * @param apiAsked whether the API was asked
 * @param apiError why the API could not be asked, if it could not
 */
public record Explanation(String node, KernelVerdict kernel, ApiClaims api, boolean apiAsked, Optional<String> apiError) {
  /** The verdict in one word (JSON field {@code verdict}). */
  public enum Kind {
    STEERED("steered"), LOCAL("local"), HELD("held"), IN_CLUSTER("in-cluster"), NOT_OPTED_IN("not-opted-in");

    public final String json;

    Kind(String json) {
      this.json = json;
    }
  }

  public Explanation {
    Objects.requireNonNull(node);
    Objects.requireNonNull(kernel);
    Objects.requireNonNull(api);
    Objects.requireNonNull(apiError);
  }

  public Kind kind() {
    if (kernel.held()) {
      return Kind.HELD;
    }
    if (kernel.steered()) {
      return Kind.STEERED;
    }
    boolean ours = kernel.rule().isPresent() || kernel.snatService().isPresent();
    if (kernel.inCluster() && ours) {
      return Kind.IN_CLUSTER;
    }
    // sourceIPBy LoadBalancerIP without a network: our SNAT alone, on the node's own route
    return ours ? Kind.LOCAL : Kind.NOT_OPTED_IN;
  }

  /** The steering host's node name (from the API's Node addresses), if it is known. */
  public Optional<String> steeredToNode() {
    return kernel.steeredTo().map(a -> api.nodesByAddress().get(a.addressText()));
  }

  /** The address the steered packet leaves its host with: the LB IP of the claiming service, of its family. */
  Optional<String> hostSnat() {
    return api.egressClaim().filter(c -> c.sourceIpBy().equals("LoadBalancerIP")).flatMap(c -> c.lbIps().stream()
        .filter(ip -> sameFamily(ip, kernel.source())).findFirst());
  }

  private static boolean sameFamily(String ip, IpPrefix p) {
    try {
      return IpPrefix.parseHost(ip).family() == p.family();
    } catch (RuntimeException e) {
      return false;
    }
  }

  public String sentence() {
    String who = kernel.source().addressText() + api.pod().map(p -> " (" + p + ")").orElse("");
    String table = tableText(kernel.table());
    String route = kernel.outputInterface() + " (table " + table + ")";
    return switch (kind()) {
      case HELD -> who + " does not leave " + node + ": its packets out of the cluster are dropped ("
          + kernel.heldDrops() + " so far), because EgressService " + kernel.heldBy().orElse("?") + " has no host"
          + refusalsText();
      case STEERED -> who + " leaves " + node + " steered to "
          + steeredToNode().map(n -> n + " (" + kernel.steeredTo().get().addressText() + ")")
              .orElse(kernel.steeredTo().get().addressText())
          + " over " + kernel.outputInterface() + " and leaves there "
          + hostSnat().map(ip -> "as " + ip).orElse("with the SNAT of its host") + because();
      case IN_CLUSTER -> who + " reaches " + kernel.destination().addressText() + " through " + route
          + " with its own address: the destination is in the cluster, so " + kernel.thrownBy()
              .map(t -> "our '" + t + "' hands it back to the rules after ours").orElse("no SNAT of ours applies")
          + because();
      case LOCAL -> who + " leaves " + node + " through " + route
          + kernel.snat().map(s -> " as " + s.addressText()).orElse(" with no SNAT of ours") + because()
          + fellThrough();
      case NOT_OPTED_IN -> who + " leaves " + node + " through " + route + "; no rule of ours touches it"
          + notOptedInWhy();
    };
  }

  private String because() {
    Optional<ApiClaims.Claim> claim = api.egressClaim();
    if (claim.isPresent()) {
      return ", because EgressService " + claim.get().service() + " (" + claim.get().describe() + ")";
    }
    String table = kernel.ruleTable().isPresent() ? "network " + tableText(kernel.ruleTable().getAsLong()) : "";
    return kernel.snatService().map(s -> ", because EgressService " + s + " ("
        + (kernel.snat().isPresent() ? "LoadBalancerIP" + (table.isEmpty() ? "" : ", ") : "") + table + ")")
        .orElse(kernel.ruleTable().isPresent() ? ", because of our rule '" + kernel.rule().get() + "'" : "");
  }

  /**
   * Our rule sent the lookup to the service's table, yet another table's route decided, and no throw route of ours
   * handed it back: the network's table has no route to the destination (e.g. none of its family), so the packet
   * fell through to the rules after ours.
   */
  private String fellThrough() {
    if (kernel.ruleTable().isEmpty() || kernel.ruleTable().getAsLong() == kernel.table() || kernel.thrownBy().isPresent()) {
      return "";
    }
    return "; but table " + tableText(kernel.ruleTable().getAsLong()) + " has no route to "
        + kernel.destination().addressText() + ", so the lookup fell through to table " + tableText(kernel.table())
        + ": add one of its family to the network's table";
  }

  private String notOptedInWhy() {
    Optional<ApiClaims.Claim> claim = api.egressClaim();
    if (claim.isEmpty()) {
      if (!apiAsked || apiError.isPresent()) {
        return "";
      }
      return api.claims().isEmpty() ? ": it did not opt in (no Service lists it as an endpoint)"
          : ": it did not opt in (Service " + api.claims().stream().map(ApiClaims.Claim::service)
              .collect(java.util.stream.Collectors.joining(", ")) + " that lists it has no EgressService)";
    }
    return ": EgressService " + claim.get().service() + " (" + claim.get().describe() + ") claims it, but"
        + (claim.get().refusals().isEmpty() ? " no agent acted for it on this node yet" : refusalsText());
  }

  private String refusalsText() {
    List<ApiClaims.Reason> refusals = api.egressClaim().map(ApiClaims.Claim::refusals).orElse(List.of());
    if (refusals.isEmpty()) {
      return "";
    }
    StringBuilder sb = new StringBuilder(refusals.size() == 1 ? " " : " ");
    for (int i = 0; i < refusals.size(); i++) {
      ApiClaims.Reason r = refusals.get(i);
      sb.append(i == 0 ? "" : "; ").append(r.reason()).append(": ").append(r.message());
    }
    return sb.toString().isBlank() ? "" : " (" + sb.toString().trim() + ")";
  }

  static String tableText(long table) {
    return table == 254 ? "main" : table == 253 ? "default" : table == 255 ? "local" : Long.toString(table);
  }
}
