package io.egressservice.nft;

import io.egressservice.kernel.Nftables;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Objects;

/**
 * The table that marks the established flows of sources whose host just became this node, so that a rule can keep
 * them on their old path (steered to the old host) until their conntrack entries are gone; see
 * {@code dataplane.FlowDrain}. It exists only for the milliseconds of such a switch:
 *
 * <pre>
 * table inet egress_service_agent_drain {
 *   set sources_v4 { type ipv4_addr; flags timeout; elements = { 10.128.2.5 timeout 10000ms } }
 *   chain prerouting {
 *     type filter hook prerouting priority mangle + 10; policy accept;    # after mark mode's mark_prerouting
 *     ip saddr @sources_v4 ct direction original ct status &amp; (snat | confirmed) == confirmed
 *         meta mark set meta mark &amp; ~MASK | VALUE
 *   }
 * }
 * </pre>
 *
 * (and the same for IPv6). {@code confirmed} without {@code snat}: an entry made before the switch, whose NAT its
 * first packet chose as the identity (steered); a flow's first packet after the switch is not confirmed yet, takes
 * the local route and its SNAT, and is never marked. Only the mask's bits of the mark change. The elements expire by
 * themselves, so an agent that dies mid-switch leaves no mark behind for long. Kernel: the {@code inet} family's
 * prerouting hook (3.14), {@code ct status} and {@code meta mark set} (3.13), element timeouts (4.1); all on RHEL 9's
 * 5.14.
 */
public final class DrainNftables {
  public static final String TABLE = "egress_service_agent_drain";
  /** After mark mode's {@code mark_prerouting} (mangle, -150), whose mark this one replaces for drained flows. */
  static final int PRIORITY = -140;

  private final Nftables nft;

  public DrainNftables(Nftables nft) {
    this.nft = Objects.requireNonNull(nft);
  }

  /**
   * Writes the table whole (replacing any left-over) with {@code sources}, each expiring after {@code expiry}; their
   * established flows without SNAT get {@code value} in the bits of {@code mask}.
   */
  public void write(Collection<IpPrefix> sources, long mask, long value, Duration expiry) {
    nft.runScript(replace() + script(sources, mask, value, expiry));
  }

  /** Removes the table (a no-op when it is absent). */
  public void delete() {
    nft.runScript(replace());
  }

  private static String replace() {
    return "add table inet " + TABLE + "\ndelete table inet " + TABLE + "\n";
  }

  /** The table (package-visible for its test). */
  static String script(Collection<IpPrefix> sources, long mask, long value, Duration expiry) {
    if ((value & ~mask) != 0 || value == 0) {
      throw new IllegalArgumentException("drain mark 0x" + Long.toHexString(value) + " is not a non-zero value in mask 0x"
          + Long.toHexString(mask));
    }
    long keep = ~mask & 0xffffffffL;
    StringBuilder sb = new StringBuilder("table inet ").append(TABLE).append(" {\n");
    StringBuilder chain = new StringBuilder();
    for (IpFamily f : IpFamily.values()) {
      String fam = f == IpFamily.V4 ? "v4" : "v6";
      String ip = f == IpFamily.V4 ? "ip" : "ip6";
      List<String> of = sources.stream().filter(p -> p.family() == f).map(IpPrefix::addressText).distinct().sorted()
          .map(a -> a + " timeout " + Math.max(1, expiry.toMillis()) + "ms").toList();
      sb.append("  set sources_").append(fam).append(" { type ").append(f == IpFamily.V4 ? "ipv4_addr" : "ipv6_addr")
          .append("; flags timeout; ").append(of.isEmpty() ? "" : "elements = { " + String.join(", ", of) + " } ")
          .append("}\n");
      chain.append("    ").append(ip).append(" saddr @sources_").append(fam)
          .append(" ct direction original ct status & (snat | confirmed) == confirmed meta mark set meta mark & 0x")
          .append(Long.toHexString(keep)).append(" | 0x").append(Long.toHexString(value)).append('\n');
    }
    sb.append("  chain prerouting {\n    type filter hook prerouting priority ").append(PRIORITY)
        .append("; policy accept;\n").append(chain).append("  }\n}\n");
    return sb.toString();
  }
}
