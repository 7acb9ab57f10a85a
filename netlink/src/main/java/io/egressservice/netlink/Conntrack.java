package io.egressservice.netlink;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;

/**
 * Restarts the flows of endpoints whose treatment changed. A flow's NAT is chosen by its first packet and kept by
 * its conntrack entry: when an endpoint's treatment changes (steered to a host, SNAT here, held), its flows out of
 * the cluster must start over, or they keep leaving as before (a steered flow's identity SNAT would carry the
 * pod's own address out of the new host). Its flows inside the cluster (pods, ClusterIPs, nodes) keep their entry:
 * their treatment never changed, and a DNATed one (a ClusterIP) cannot survive losing it.
 *
 * <p>How, on every kernel users run (5.14 and later, and older): one dump of the table, then a delete by exact
 * original tuple and zone per matching entry (both requests as old as ctnetlink, 2.6.14). The kernel cannot
 * express "destination outside these prefixes", so the match is made here. The dump is narrowed in the kernel
 * where that is safe: to the sources' family when they share one, and to one IPv4 source ({@code CTA_FILTER} on
 * dumps, Linux 5.8, commit cb8aa9a3affb): a few IPv4 sources ({@value #FILTERED_DUMPS_MAX} at most) take one such
 * dump each, first, and the rest (their IPv6 addresses) one dump of their family, so that a dual-stack endpoint's
 * IPv4 flows restart without waiting for a walk of the whole table. Before 5.8 the kernel ignores that
 * attribute (it lies past the kernel's {@code CTA_MAX}, which nfnetlink's liberal parsing skips) and dumps the
 * whole table, which the match here filters anyway. The kernel's IPv6 source filter is never used: its
 * comparison is inverted ({@code !ipv6_addr_cmp} in {@code ctnetlink_filter_match_tuple}, 5.8 to at least 6.18),
 * so it returns every flow but that source's. A kernel that refuses the filtered dump (EINVAL, EOPNOTSUPP) is
 * remembered, and the dump is made whole from then on.
 *
 * <p>Not used: the filtered delete ({@code IPCTNL_MSG_CT_DELETE} with {@code CTA_FILTER}, as {@code conntrack -D
 * -s}), which only Linux 6.12 accepts (commit 1ef7f50ccc6e, "ctnetlink: support CTA_FILTER for flush"; 5.14, 5.15,
 * 6.1, 6.6 and 6.8 answer EINVAL) and which cannot keep the in-cluster flows. A dump walks the table once, as that
 * delete does in the kernel; one per reconcile with changed endpoints, whatever their number.
 */
public final class Conntrack {
  private static final int MSG_NEW = 1 << 8; // NFNL_SUBSYS_CTNETLINK, IPCTNL_MSG_CT_NEW (a dumped entry)
  private static final int MSG_GET = (1 << 8) | 1; // IPCTNL_MSG_CT_GET
  private static final int MSG_DELETE = (1 << 8) | 2; // IPCTNL_MSG_CT_DELETE
  private static final int CTA_TUPLE_ORIG = 1;
  private static final int CTA_TUPLE_REPLY = 2;
  private static final int CTA_TUPLE_IP = 1;
  private static final int CTA_IP_V4_SRC = 1;
  private static final int CTA_IP_V4_DST = 2;
  private static final int CTA_IP_V6_SRC = 3;
  private static final int CTA_IP_V6_DST = 4;
  private static final int CTA_ZONE = 18;
  private static final int CTA_FILTER = 25;
  private static final int CTA_FILTER_ORIG_FLAGS = 1;
  private static final int CTA_FILTER_F_CTA_IP_SRC = 1;
  private static final int AF_UNSPEC = 0;
  private static final int AF_INET = 2;
  private static final int AF_INET6 = 10;
  private static final int ENOENT = 2;
  private static final int EINVAL = 22;
  private static final int EOPNOTSUPP = 95;
  private static final int DUMP_BUFFER = 1 << 17;
  /**
   * Up to this many IPv4 sources take a kernel-filtered dump each (the endpoints a fast-path reconcile switched);
   * more take one dump of their family, since each filtered dump still walks the whole table in the kernel.
   */
  static final int FILTERED_DUMPS_MAX = 4;

  private final Function<String, ConntrackChannel> open;
  /**
   * Whether the kernel refused a source-filtered dump. The first one is its own probe (no separate request on an
   * unused address): on a refusal the same call dumps whole, and so does every later one.
   */
  private volatile boolean filteredDumpRefused;

  /** Talks to the kernel of the namespace it is called in. */
  public Conntrack() {
    this(ConntrackChannel::kernel);
  }

  /** Talks through {@code open} (given a description of the namespace); for tests. */
  Conntrack(Function<String, ConntrackChannel> open) {
    this.open = open;
  }

  /**
   * Deletes, in the namespace of {@code thread}, every entry whose original source is one of {@code sources}
   * (host addresses) and whose original destination lies outside {@code inCluster} (both families).
   *
   * @return the errors, one line each (empty when all went through)
   */
  public List<String> restartFlowsLeavingTheCluster(NetnsThread thread, Collection<IpPrefix> sources,
      Collection<IpPrefix> inCluster) {
    if (sources.isEmpty()) {
      return List.of();
    }
    Set<IpPrefix> from = Set.copyOf(sources);
    AddressRanges keep = new AddressRanges(inCluster);
    return thread.call(() -> {
      List<String> errors = new ArrayList<>();
      try (ConntrackChannel c = open.apply(thread.describe())) {
        Set<IpPrefix> rest = new HashSet<>(from);
        List<IpPrefix> v4 = from.stream().filter(p -> p.family() == IpFamily.V4).sorted().toList();
        if (v4.size() <= FILTERED_DUMPS_MAX) {
          // IPv4 first, each by its own kernel-filtered dump: its flows restart before the rest of the table is
          // walked for the other family (an endpoint switched under a steady stream loses what leaves meanwhile).
          for (IpPrefix source : v4) {
            if (filteredDumpRefused) {
              break;
            }
            Dump dump = dump(c, AF_INET, Optional.of(source), Set.of(source), keep);
            if (dump.errno() == EINVAL || dump.errno() == EOPNOTSUPP) {
              filteredDumpRefused = true; // asked once: from now on the dumps are whole
              break;
            }
            rest.remove(source);
            if (dump.error().isPresent()) {
              errors.add(dump.error().get());
            } else {
              deleteEach(c, dump.matched(), errors);
            }
          }
        }
        if (!rest.isEmpty()) {
          Dump dump = dump(c, family(rest), Optional.empty(), rest, keep);
          if (dump.error().isPresent()) {
            errors.add(dump.error().get());
          } else {
            deleteEach(c, dump.matched(), errors);
          }
        }
      } catch (NetlinkException | IllegalStateException | IllegalArgumentException e) {
        errors.add("conntrack restart: " + e.getMessage());
      }
      return errors;
    });
  }

  /**
   * The entries {@link #restartFlowsLeavingTheCluster} would delete now, found ahead of the change that makes
   * them stale, to be deleted by {@link #delete} right after it: the dumps (tens of milliseconds on a loaded
   * machine, each walks the whole table) then lie before the change, and only the deletes by exact tuple (one
   * lookup each) after it. A flow that starts in between is not found: a later
   * {@link #restartFlowsLeavingTheCluster} catches it.
   */
  public Found find(NetnsThread thread, Collection<IpPrefix> sources, Collection<IpPrefix> inCluster) {
    if (sources.isEmpty()) {
      return new Found(List.of(), List.of());
    }
    Set<IpPrefix> from = Set.copyOf(sources);
    AddressRanges keep = new AddressRanges(inCluster);
    return thread.call(() -> {
      List<Matched> matched = new ArrayList<>();
      List<String> errors = new ArrayList<>();
      try (ConntrackChannel c = open.apply(thread.describe())) {
        for (Dump d : dumps(c, from, keep)) {
          d.error().ifPresent(errors::add);
          matched.addAll(d.matched());
        }
      } catch (NetlinkException | IllegalStateException | IllegalArgumentException e) {
        errors.add("conntrack restart: " + e.getMessage());
      }
      return new Found(matched, errors);
    });
  }

  /** Deletes what {@link #find} found (an entry gone meanwhile is success); the errors, its own included. */
  public List<String> delete(NetnsThread thread, Found found) {
    if (found.matched.isEmpty()) {
      return found.errors;
    }
    return thread.call(() -> {
      List<String> errors = new ArrayList<>(found.errors);
      try (ConntrackChannel c = open.apply(thread.describe())) {
        deleteEach(c, found.matched, errors);
      } catch (NetlinkException | IllegalStateException | IllegalArgumentException e) {
        errors.add("conntrack restart: " + e.getMessage());
      }
      return errors;
    });
  }

  /**
   * Deletes again the entries that took over the flows {@code found} held with the source's own address (steered,
   * identity NAT). Such a flow's answers still arrive for a moment after its entry is deleted (the old host
   * un-NATs the answers to what it sent before the switch and routes them to the pod): one that arrives before
   * the pod's next packet makes a new entry with the outside host as its original source, the pod's flow becomes
   * that entry's reply direction, takes no SNAT, passes the no-host guard (original direction only) and leaves
   * the uplink with the pod's own address for as long as it runs (each answer keeps the entry alive). Its original
   * tuple is the deleted entry's reply tuple: no other flow can hold it, so deleting it is exact. Done right after
   * the delete and again by the later pass, once the answers in flight have arrived.
   */
  public List<String> deleteTakeovers(NetnsThread thread, Found found) {
    if (found.matched.stream().noneMatch(m -> m.reverse().isPresent())) {
      return List.of();
    }
    return thread.call(() -> {
      List<String> errors = new ArrayList<>();
      try (ConntrackChannel c = open.apply(thread.describe())) {
        // A takeover lets the pod's packets out with its own address, each drawing an answer that could make it
        // again before the pod's next packet starts the flow over: again until a round finds none, a few
        // milliseconds apart (an answer still in flight by then arrives after the pod's next packet, which makes
        // the flow's entry first, and the answer then joins it instead).
        for (int round = 0; round < TAKEOVER_ROUNDS && deleteEach(c, found.matched, errors, true) > 0; round++) {
          Thread.sleep(TAKEOVER_ROUND_MILLIS);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (NetlinkException | IllegalStateException | IllegalArgumentException e) {
        errors.add("conntrack restart: " + e.getMessage());
      }
      return errors;
    });
  }

  private static final int TAKEOVER_ROUNDS = 5;
  private static final long TAKEOVER_ROUND_MILLIS = 3;

  /** Entries found by {@link #find}, to delete by exact tuple, and the errors of finding them. */
  public static final class Found {
    private final List<Matched> matched;
    private final List<String> errors;

    private Found(List<Matched> matched, List<String> errors) {
      this.matched = List.copyOf(matched);
      this.errors = List.copyOf(errors);
    }

    /** How many entries were found. */
    public int size() {
      return matched.size();
    }

    /**
     * Those of the found entries whose flow leaves with the source's own address (no SNAT: a steered flow's identity
     * NAT), with the errors of finding them.
     */
    public Found withoutSnat() {
      return new Found(matched.stream().filter(m -> m.reverse().isPresent()).toList(), errors);
    }
  }

  /** The dumps of {@link #find}: as in {@link #restartFlowsLeavingTheCluster}, a few IPv4 sources filtered each. */
  private List<Dump> dumps(ConntrackChannel c, Set<IpPrefix> from, AddressRanges keep) {
    List<Dump> out = new ArrayList<>();
    Set<IpPrefix> rest = new HashSet<>(from);
    List<IpPrefix> v4 = from.stream().filter(p -> p.family() == IpFamily.V4).sorted().toList();
    if (v4.size() <= FILTERED_DUMPS_MAX) {
      for (IpPrefix source : v4) {
        if (filteredDumpRefused) {
          break;
        }
        Dump dump = dump(c, AF_INET, Optional.of(source), Set.of(source), keep);
        if (dump.errno() == EINVAL || dump.errno() == EOPNOTSUPP) {
          filteredDumpRefused = true;
          break;
        }
        rest.remove(source);
        out.add(dump);
      }
    }
    if (!rest.isEmpty()) {
      out.add(dump(c, family(rest), Optional.empty(), rest, keep));
    }
    return out;
  }

  /** Whether the kernel refused the source-filtered dump (then every dump is whole). */
  boolean filteredDumpRefused() {
    return filteredDumpRefused;
  }

  private static int family(Set<IpPrefix> sources) {
    boolean v4 = sources.stream().anyMatch(p -> p.family() == IpFamily.V4);
    boolean v6 = sources.stream().anyMatch(p -> p.family() == IpFamily.V6);
    return v4 && v6 ? AF_UNSPEC : v4 ? AF_INET : AF_INET6;
  }

  /** A dump's result: the entries to delete, or what went wrong (and the kernel's errno, 0 if none). */
  private record Dump(List<Matched> matched, Optional<String> error, int errno) {}

  /**
   * An entry to delete: its family, the payloads of its original tuple and zone as the kernel dumped them; {@code
   * reverse}: its reply tuple when the flow left with the source's own address (no SNAT: steered, with the
   * identity NAT), see {@link #deleteTakeovers}.
   */
  private record Matched(byte family, byte[] tuple, Optional<byte[]> zone, IpPrefix source, Optional<byte[]> reverse) {}

  private static Dump dump(ConntrackChannel c, int family, Optional<IpPrefix> filter, Set<IpPrefix> sources,
      AddressRanges keep) {
    ByteBuffer buf = ByteBuffer.allocateDirect(DUMP_BUFFER).order(ByteOrder.nativeOrder());
    buf.position(16);
    buf.put((byte) family);
    buf.put((byte) 0); // NFNETLINK_V0
    buf.putShort((short) 0);
    if (filter.isPresent()) {
      int orig = begin(buf, CTA_TUPLE_ORIG | NetlinkConstants.NLA_F_NESTED);
      int ip = begin(buf, CTA_TUPLE_IP | NetlinkConstants.NLA_F_NESTED);
      attr(buf, CTA_IP_V4_SRC, filter.get().addressBytes());
      end(buf, ip);
      end(buf, orig);
      int f = begin(buf, CTA_FILTER | NetlinkConstants.NLA_F_NESTED);
      attr(buf, CTA_FILTER_ORIG_FLAGS, ByteBuffer.allocate(4).order(ByteOrder.nativeOrder())
          .putInt(CTA_FILTER_F_CTA_IP_SRC).array());
      end(buf, f);
    }
    c.send(buf, header(buf, MSG_GET, NetlinkConstants.NLM_F_REQUEST | NetlinkConstants.NLM_F_DUMP, 1));
    List<Matched> matched = new ArrayList<>();
    while (true) {
      buf.clear();
      int n = c.receive(buf);
      if (n < 0) {
        return new Dump(List.of(), Optional.of("conntrack dump: no answer within 2 s"), 0);
      }
      for (int off = 0; off + 16 <= n; ) {
        int mlen = buf.getInt(off);
        if (mlen < 16 || off + mlen > n) {
          throw new IllegalArgumentException("malformed conntrack dump message at offset " + off);
        }
        int type = Short.toUnsignedInt(buf.getShort(off + 4));
        if (type == NetlinkConstants.NLMSG_DONE) {
          return new Dump(matched, Optional.empty(), 0);
        }
        if (type == NetlinkConstants.NLMSG_ERROR && mlen >= 20) {
          int err = -buf.getInt(off + 16);
          if (err != 0) {
            return new Dump(List.of(), Optional.of("conntrack dump" + (filter.isPresent() ? " of source "
                + filter.get().addressText() : "") + ": errno " + err), err);
          }
        } else if (type == MSG_NEW && mlen >= 20) {
          match(buf, off, mlen, sources, keep).ifPresent(matched::add);
        }
        off += NetlinkMessageWriter.align(mlen);
      }
    }
  }

  /** Deletes each entry by its exact original tuple (and zone); one gone meanwhile (ENOENT) is success. */
  private static void deleteEach(ConntrackChannel c, List<Matched> matched, List<String> errors) {
    deleteEach(c, matched, errors, false);
    // Right after, not only later: see deleteTakeovers.
    deleteEach(c, matched, errors, true);
  }

  /**
   * Deletes each entry by its exact original tuple, or with {@code reverse} the entry (if any) whose original
   * tuple is a found entry's reply tuple.
   */
  private static int deleteEach(ConntrackChannel c, List<Matched> matched, List<String> errors, boolean reverse) {
    int deleted = 0;
    ByteBuffer out = ByteBuffer.allocateDirect(8192).order(ByteOrder.nativeOrder());
    int seq = 2;
    for (Matched m : matched) {
      if (reverse && m.reverse().isEmpty()) {
        continue;
      }
      out.clear();
      out.position(16);
      out.put(m.family());
      out.put((byte) 0); // NFNETLINK_V0
      out.putShort((short) 0);
      attr(out, CTA_TUPLE_ORIG | NetlinkConstants.NLA_F_NESTED, reverse ? m.reverse().get() : m.tuple());
      if (m.zone().isPresent()) {
        attr(out, CTA_ZONE, m.zone().get());
      }
      c.send(out, header(out, MSG_DELETE, NetlinkConstants.NLM_F_REQUEST | NetlinkConstants.NLM_F_ACK, seq++));
      String what = "conntrack delete of a flow " + (reverse ? "to " : "from ") + m.source().addressText();
      out.clear();
      int n = c.receive(out);
      if (n < 0) {
        errors.add(what + ": no answer within 2 s");
      } else if (n >= 20 && out.getShort(4) == NetlinkConstants.NLMSG_ERROR) {
        int err = -out.getInt(16);
        if (err != 0 && err != ENOENT) {
          errors.add(what + ": errno " + err);
        } else if (err == 0) {
          deleted++;
        }
      }
    }
    return deleted;
  }

  /** The entry at {@code off} when its original source is one of {@code sources}, its destination outside {@code keep}. */
  private static Optional<Matched> match(ByteBuffer b, int off, int mlen, Set<IpPrefix> sources, AddressRanges keep) {
    try {
      NetlinkAttributes attrs = NetlinkAttributes.parse(b, off + 20, off + mlen);
      Optional<NetlinkAttributes> ip = attrs.nested(CTA_TUPLE_ORIG).flatMap(t -> t.nested(CTA_TUPLE_IP));
      if (ip.isEmpty()) {
        return Optional.empty();
      }
      Optional<IpPrefix> source = address(ip.get(), CTA_IP_V4_SRC, CTA_IP_V6_SRC);
      if (source.isEmpty() || !sources.contains(source.get())) {
        return Optional.empty();
      }
      Optional<IpPrefix> destination = address(ip.get(), CTA_IP_V4_DST, CTA_IP_V6_DST);
      if (destination.isEmpty() || keep.contains(destination.get())) {
        return Optional.empty();
      }
      Optional<byte[]> reverse = attrs.nested(CTA_TUPLE_REPLY).flatMap(t -> t.nested(CTA_TUPLE_IP))
          .flatMap(r -> address(r, CTA_IP_V4_DST, CTA_IP_V6_DST)).filter(source.get()::equals)
          .flatMap(d -> attrs.bytes(CTA_TUPLE_REPLY));
      return Optional.of(new Matched(b.get(off + 16), attrs.bytes(CTA_TUPLE_ORIG).orElseThrow(), attrs.bytes(CTA_ZONE),
          source.get(), reverse));
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
  }

  private static Optional<IpPrefix> address(NetlinkAttributes ip, int v4, int v6) {
    return ip.bytes(v4).filter(v -> v.length == 4).or(() -> ip.bytes(v6).filter(v -> v.length == 16))
        .map(IpPrefix::host);
  }

  /** Writes the netlink header of the message that ends at {@code b}'s position; returns its length. */
  private static int header(ByteBuffer b, int type, int flags, int seq) {
    int len = b.position();
    b.putInt(0, len);
    b.putShort(4, (short) type);
    b.putShort(6, (short) flags);
    b.putInt(8, seq);
    b.putInt(12, 0);
    return len;
  }

  private static int begin(ByteBuffer b, int type) {
    int start = b.position();
    b.putShort((short) 0);
    b.putShort((short) type);
    return start;
  }

  private static void end(ByteBuffer b, int start) {
    b.putShort(start, (short) (b.position() - start));
  }

  private static void attr(ByteBuffer b, int type, byte[] value) {
    b.putShort((short) (4 + value.length));
    b.putShort((short) type);
    b.put(value);
    while ((b.position() & 3) != 0) {
      b.put((byte) 0);
    }
  }
}
