package io.egressservice.nft;

import static io.egressservice.nft.table.Expr.and;
import static io.egressservice.nft.table.Expr.ct;
import static io.egressservice.nft.table.Expr.flags;
import static io.egressservice.nft.table.Expr.in;
import static io.egressservice.nft.table.Expr.is;
import static io.egressservice.nft.table.Expr.meta;
import static io.egressservice.nft.table.Expr.number;
import static io.egressservice.nft.table.Expr.or;
import static io.egressservice.nft.table.Expr.payload;
import static io.egressservice.nft.table.Expr.rule;
import static io.egressservice.nft.table.Expr.set;
import static io.egressservice.nft.table.Expr.text;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.kernel.Nftables;
import io.egressservice.nft.table.NftTable;
import io.egressservice.nft.table.NftTable.Chain;
import io.egressservice.nft.table.NftTable.Element;
import io.egressservice.nft.table.NftTable.NftSet;
import io.egressservice.nft.table.TableWriter;
import java.time.Duration;
import java.util.Collection;
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
 * 5.14. Timeouts are whole seconds (what libnftables-json of nftables 1.0.6 reads).
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
    nft.run(TableWriter.replace(table(sources, mask, value, expiry)));
  }

  /** Removes the table (a no-op when it is absent). */
  public void delete() {
    nft.run(TableWriter.remove("inet", TABLE));
  }

  /** The table (package-visible for its test). */
  static NftTable table(Collection<IpPrefix> sources, long mask, long value, Duration expiry) {
    if ((value & ~mask) != 0 || value == 0) {
      throw new IllegalArgumentException("drain mark 0x" + Long.toHexString(value) + " is not a non-zero value in mask 0x"
          + Long.toHexString(mask));
    }
    long keep = ~mask & 0xffffffffL;
    NftTable table = NftTable.of("inet", TABLE);
    Chain chain = Chain.base("prerouting", "filter", "prerouting", PRIORITY);
    for (IpFamily f : IpFamily.values()) {
      String set = "sources_" + (f == IpFamily.V4 ? "v4" : "v6");
      table = table.withSet(NftSet.of(set, f == IpFamily.V4 ? "ipv4_addr" : "ipv6_addr").withFlags("timeout")
          .withElements(sources.stream().filter(p -> p.family() == f).map(IpPrefix::addressText).distinct().sorted()
              .map(a -> Element.of(a).withTimeout(expiry)).toList()));
      chain = chain.withRule(rule(in(payload(f.nftName(), "saddr"), set), is(ct("direction"), text("original")),
          is(and(ct("status"), flags("confirmed", "snat")), text("confirmed")),
          set(meta("mark"), or(and(meta("mark"), number(keep)), number(value)))));
    }
    return table.withChain(chain);
  }
}
