package io.egressservice.cli;

import io.egressservice.nft.ServiceComments;
import io.egressservice.ip.IpFamily;
import io.egressservice.plan.DesiredState;
import io.egressservice.plan.MarkEntry;
import io.egressservice.plan.RouteSpec;
import io.egressservice.model.RuleMode;
import io.egressservice.plan.RuleSpec;
import io.egressservice.plan.ServiceOutcome;
import io.egressservice.plan.SnatEntry;
import io.egressservice.plan.SteerRoute;
import io.egressservice.plan.SteeringPlan;
import io.egressservice.dataplane.SteeringDataplane;
import io.egressservice.text.Printable;
import io.egressservice.text.ShellWords;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;

/**
 * {@code plan --output text}: copy-pasteable {@code ip rule add} commands and an {@code nft -f}
 * script for the owned table, with a comment line per service saying what was decided and why.
 *
 * <p>Safe to paste whatever the objects hold: every value from them in a command (a {@code network}, which an
 * offline plan keeps by name) is one shell word ({@link ShellWords#visibleWord}), and every comment and nft string
 * is {@linkplain Printable#escape escaped}, so no name, reason or network can end a comment's line, the nft
 * here-document or a quoted nft string, nor hide anything from the reader's terminal.
 */
public final class PlanText {
  public static final String NFT_TABLE = "egress_service_agent";

  private PlanText() {}

  public static String render(DesiredState s) {
    StringBuilder sb = new StringBuilder();
    sb.append("# egress-service-agent plan for node ").append(Printable.escape(s.node())).append(": ")
        .append(s.rules().size()).append(" ip rule(s), ").append(s.routes().size()).append(" throw route(s), ")
        .append(s.snat().size())
        .append(" SNAT entr").append(s.snat().size() == 1 ? "y" : "ies")
        .append(" (priority ").append(s.priority()).append(", protocol ").append(s.ruleProtocol()).append(")\n");
    if (s.services().isEmpty()) {
      sb.append("# no EgressService in the input\n");
    }
    for (String r : s.refusedInputs()) {
      comment(sb, "# refused input: " + r);
    }
    for (ServiceOutcome o : s.services()) {
      comment(sb, "# " + o.service() + ": " + (o.configured() ? "configured: " : "not configured: ") + o.reason());
      for (ServiceOutcome.SkippedEndpoint e : o.skippedEndpoints()) {
        comment(sb, "#   skipped " + e.address() + ": " + e.reason());
      }
      for (String w : o.warnings()) {
        comment(sb, "#   warning: " + w);
      }
      if (!o.remoteEndpoints().isEmpty()) {
        comment(sb, "#   not on this node (their egress uses these rules only if the pod network steers it here): "
            + String.join(", ", o.remoteEndpoints()));
      }
      if (!o.steeredEndpoints().isEmpty()) {
        comment(sb, "#   steered to the host: " + o.steeredEndpoints().stream().map(Object::toString)
            .collect(Collectors.joining(", ")));
      }
      if (!o.steeredIn().isEmpty()) {
        comment(sb, "#   steered here by their nodes: " + String.join(", ", o.steeredIn()));
      }
    }
    if (s.ruleMode() == RuleMode.MARK) {
      sb.append("# mark mode: nftables marks these sources (maps mark_v4/mark_v6); one fwmark rule per network routes them\n");
      for (Map.Entry<Long, Long> net : new TreeMap<>(s.networkMarks()).entrySet()) {
        List<String> sources = s.marks().stream().filter(m -> m.table() == net.getKey())
            .map(m -> m.source() + " (" + m.service() + ")").toList();
        comment(sb, "#   table " + net.getKey() + " <- mark 0x" + Long.toHexString(net.getValue()) + ": "
            + String.join(", ", sources));
      }
    }
    sb.append('\n');
    steering(sb, s.steering(), s.ruleProtocol());
    for (RuleSpec r : s.rules()) {
      sb.append(ruleCommand(r, s.ruleProtocol(), s.markMask()));
      r.service().ifPresent(svc -> sb.append("  # ").append(Printable.escape(svc)));
      if (r.service().isEmpty() && r.to().isPresent()) {
        sb.append("  # in-cluster destination keeps the main table");
      } else if (r.service().isEmpty()) {
        sb.append("  # network ").append(Printable.escape(r.table().name())).append(": the sources marked 0x")
            .append(Long.toHexString(r.fwmark().orElse(0))).append(" above");
      }
      if (!ShellWords.visibleWord(r.table().name()).equals(ShellWords.quote(r.table().name()))) {
        sb.append(" (its network holds control characters, shown escaped: no node has such a table)");
      }
      sb.append('\n');
    }
    if (!s.routes().isEmpty()) {
      sb.append("# in-cluster destinations: thrown back from each service table to the rules after ")
          .append(s.priority()).append(" (only the service's sources look there)\n");
    }
    for (RouteSpec r : s.routes()) {
      sb.append(routeCommand(r, s.ruleProtocol())).append('\n');
    }
    sb.append('\n').append(nftScript(s));
    return sb.toString();
  }

  /** {@code ip -4 route add throw 10.128.0.0/14 table 100 protocol 201}. */
  public static String routeCommand(RouteSpec r, int protocol) {
    return "ip " + r.family().ipFlag() + " route add throw " + r.to().cidrText() + " table "
        + ShellWords.visibleWord(r.table().name()) + " protocol " + protocol;
  }

  /** One comment line: nothing in {@code text} can end it early or hide part of it. */
  private static void comment(StringBuilder sb, String text) {
    sb.append(Printable.escape(text)).append('\n');
  }

  /**
   * A quoted nft string ({@code comment "..."}): escaped, and its double quotes too, since nft's strings have no
   * escape of their own for one (unambiguous: a backslash of the text is escaped already).
   */
  private static String nftString(String text) {
    return '"' + Printable.escape(text).replace("\"", "\\x22") + '"';
  }

  /** The steering device and the steering tables' routes, as {@code ip} commands (nothing when not wanted). */
  private static void steering(StringBuilder sb, SteeringPlan p, int protocol) {
    if (!p.deviceWanted()) {
      return;
    }
    sb.append("# steering: one device for every host and both families (the agent sets its MTU to the underlay's less"
            + " the encapsulation)\n")
        .append("ip link add ").append(SteeringPlan.DEVICE).append(" type vxlan external gpe dstport ").append(p.port())
        .append(" nolearning\n")
        .append("ip link set ").append(SteeringPlan.DEVICE).append(" alias ").append(SteeringPlan.DEVICE_ALIAS)
        .append(" up\n")
        .append("ip addr add ").append(SteeringDataplane.DEVICE_ADDRESS).append("/32 scope link dev ")
        .append(SteeringPlan.DEVICE).append('\n')
        .append("sysctl -w net.ipv4.conf.").append(SteeringPlan.DEVICE).append(".rp_filter=2\n");
    for (SteerRoute r : p.routes()) {
      sb.append("ip ").append(r.family().ipFlag()).append(" route add default dev ").append(SteeringPlan.DEVICE)
          .append(" encap ").append(r.family() == IpFamily.V4 ? "ip" : "ip6").append(" id ").append(SteeringPlan.VNI)
          .append(" dst ").append(r.hostAddress()).append(" csum table ").append(r.table()).append(" protocol ")
          .append(protocol).append("  # to host ").append(Printable.escape(r.host())).append('\n');
    }
    sb.append('\n');
  }

  /** {@code ip -4 rule add priority 5000 from 10.0.0.5 lookup 100 protocol 201}. */
  public static String ruleCommand(RuleSpec r, int protocol, long markMask) {
    StringBuilder sb = new StringBuilder("ip ").append(r.family().ipFlag()).append(" rule add priority ")
        .append(r.priority());
    r.from().ifPresent(p -> sb.append(" from ").append(p));
    r.to().ifPresent(p -> sb.append(" to ").append(p));
    r.sourcePort().ifPresent(port -> sb.append(" sport ").append(port));
    r.fwmark().ifPresent(m -> sb.append(" fwmark 0x").append(Long.toHexString(m)).append("/0x")
        .append(Long.toHexString(markMask)));
    sb.append(" lookup ").append(ShellWords.visibleWord(r.table().name())).append(" protocol ").append(protocol);
    return sb.toString();
  }

  private static String nftScript(DesiredState s) {
    StringBuilder sb = new StringBuilder("nft -f - <<'NFT'\n");
    sb.append("table inet ").append(NFT_TABLE).append(" {\n");
    for (IpFamily f : IpFamily.values()) {
      String type = f == IpFamily.V4 ? "ipv4_addr" : "ipv6_addr";
      List<SnatEntry> entries = s.snat().stream().filter(e -> e.family() == f).toList();
      sb.append("  map snat_").append(suffix(f)).append(" { type ").append(type).append(" : ").append(type).append(';');
      if (!entries.isEmpty()) {
        sb.append(" elements = { ").append(entries.stream()
            .map(e -> e.source() + " comment " + nftString(ServiceComments.of(e.service())) + " : " + e.to())
            .collect(Collectors.joining(", "))).append(" }");
      }
      sb.append(" }\n");
    }
    for (IpFamily f : IpFamily.values()) {
      String type = f == IpFamily.V4 ? "ipv4_addr" : "ipv6_addr";
      String elements = s.inCluster().stream().filter(p -> p.family() == f).map(Object::toString)
          .collect(Collectors.joining(", "));
      sb.append("  set in_cluster_").append(suffix(f)).append(" { type ").append(type)
          .append("; flags interval; auto-merge;");
      if (!elements.isEmpty()) {
        sb.append(" elements = { ").append(elements).append(" }");
      }
      sb.append(" }\n");
    }
    if (s.ruleMode() == RuleMode.MARK && !s.networkMarks().isEmpty()) {
      for (Map.Entry<Long, Long> net : new TreeMap<>(s.networkMarks()).entrySet()) {
        sb.append("  chain mark_t").append(net.getKey()).append(" {\n    meta mark set meta mark & 0x")
            .append(Long.toHexString(~s.markMask() & 0xffffffffL)).append(" | 0x").append(Long.toHexString(net.getValue()))
            .append("\n  }\n");
      }
      for (IpFamily f : IpFamily.values()) {
        String type = f == IpFamily.V4 ? "ipv4_addr" : "ipv6_addr";
        List<MarkEntry> entries = s.marks().stream().filter(m -> m.family() == f).toList();
        sb.append("  map mark_").append(suffix(f)).append(" {\n    type ").append(type).append(" : verdict\n");
        if (!entries.isEmpty()) {
          sb.append("    elements = { ").append(entries.stream()
              .map(m -> m.source() + " comment " + nftString(ServiceComments.of(m.service())) + " : jump mark_t" + m.table())
              .collect(Collectors.joining(", "))).append(" }\n");
        }
        sb.append("  }\n");
      }
      for (String[] hook : new String[][] {{"mark_prerouting", "filter", "prerouting"}, {"mark_output", "route", "output"}}) {
        sb.append("  chain ").append(hook[0]).append(" {\n    type ").append(hook[1]).append(" hook ").append(hook[2])
            .append(" priority mangle; policy accept;\n    ip saddr vmap @mark_v4\n    ip6 saddr vmap @mark_v6\n  }\n");
      }
    }
    sb.append("  chain postrouting {\n")
        .append("    type nat hook postrouting priority srcnat - 10; policy accept;\n")
        .append("    oifname \"egress-vx\" snat ip to ip saddr\n")
        .append("    oifname \"egress-vx\" snat ip6 to ip6 saddr\n")
        .append("    ip daddr @in_cluster_v4 return\n")
        .append("    ip6 daddr @in_cluster_v6 return\n")
        .append("    snat ip to ip saddr map @snat_v4\n")
        .append("    snat ip6 to ip6 saddr map @snat_v6\n")
        .append("  }\n}\nNFT\n");
    return sb.toString();
  }

  private static String suffix(IpFamily f) {
    return f == IpFamily.V4 ? "v4" : "v6";
  }
}
