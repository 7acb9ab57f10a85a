package io.egressservice.netlink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayDeque;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link Conntrack}'s requests against the kernel: a dump lists the entries of its families with their tuples, a dump
 * narrowed to an IPv4 source lists that source's only, a delete by key ends exactly the entry it names (and answers
 * ENOENT for one already gone), and a kernel that refuses the narrowed dump is reported by its errno. The oracle is
 * the kernel's {@code /proc/net/nf_conntrack} of the namespace.
 */
class ConntrackNetnsTest {
  private static final Pattern FLOW =
      Pattern.compile("^\\S+\\s+\\d+\\s+(\\S+)\\s+\\d+\\s+\\d+\\s+(?:\\S+\\s+)?src=(\\S+)\\s+dst=(\\S+)\\s+sport=(\\d+)"
          + "\\s+dport=(\\d+)");
  private static final int SOURCES = 4;
  private static final int UDP = 17;
  @RegisterExtension
  final ConntrackNamespace kernel = new ConntrackNamespace("ct");

  @BeforeEach
  void setUp() {
    for (int i = 1; i <= SOURCES; i++) {
      kernel.onLoopback(v4(i).addressText(), v6(i).addressText());
    }
    kernel.thread().call(() -> {
      for (int i = 1; i <= SOURCES; i++) {
        ConntrackNamespace.send(v4(i), v4(1).addressText());
        ConntrackNamespace.send(v6(i), v6(1).addressText());
      }
      return null;
    });
    assertThat(tracked()).hasSize(2 * SOURCES);
  }

  @Test
  void aDumpListsTheEntriesOfItsFamiliesWithTheirTuples() {
    Conntrack conntrack = new Conntrack(kernel.thread());

    ConntrackDump both = conntrack.dump(Set.of(IpFamily.V4, IpFamily.V6), e -> e.original().protocol() == UDP);
    ConntrackDump v6 = conntrack.dump(Set.of(IpFamily.V6), e -> true);

    assertThat(both.answer().done()).isTrue();
    assertThat(flows(both)).isEqualTo(tracked());
    assertThat(v6.entries()).allMatch(e -> e.family() == IpFamily.V6).hasSize(SOURCES);
    assertThat(both.entries()).as("no NAT in this namespace: answers come back to the sender")
        .noneMatch(ConntrackEntry::sourceTranslated)
        .allMatch(e -> e.reply().source().equals(e.original().destination()) && e.zone() == 0);
  }

  /** A tuple written for a flow is, byte for byte, the tuple the kernel dumps for it: it names the same entry. */
  @Test
  void aTupleWrittenForAFlowEqualsTheOneTheKernelDumps() {
    ConntrackEntry dumped = only(new Conntrack(kernel.thread()).dumpFrom(v4(3), e -> e.original().protocol() == UDP));

    ConntrackTuple written = ConntrackTuple.of(UDP, v4(3), dumped.original().sourcePort(), v4(1), 9);

    assertThat(written).isEqualTo(dumped.original()).hasSameHashCodeAs(dumped.original());
    assertThat(dumped.reply()).isEqualTo(ConntrackTuple.of(UDP, v4(1), 9, v4(3), dumped.original().sourcePort()));
  }

  /** One IPv4 source: the dump is narrowed to it in the kernel (Linux 5.8+), every entry it keeps passed on. */
  @Test
  void aDumpNarrowedToAnIpv4SourceListsThatSourcesEntriesOnly() {
    ConntrackDump dump = new Conntrack(kernel.thread()).dumpFrom(v4(2), e -> true);

    assertThat(dump.answer().done()).isTrue();
    assertThat(dump.entries()).extracting(e -> e.original().source()).containsOnly(v4(2));
    assertThat(dump.entries()).hasSizeGreaterThanOrEqualTo(1);
  }

  /** The kernel's IPv6 source filter matches inverted (5.8 to 6.18): the narrowed dump is not offered for IPv6. */
  @Test
  void aDumpNarrowedToAnIpv6SourceIsRefusedBeforeItReachesTheKernel() {
    assertThatThrownBy(() -> new Conntrack(kernel.thread()).dumpFrom(v6(2), e -> true))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("IPv4");
  }

  @Test
  void aDeleteEndsExactlyTheEntriesItNamesAndAnEntryGoneIsAnsweredNotFound() {
    Conntrack conntrack = new Conntrack(kernel.thread());
    List<ConntrackKey> keys = conntrack.dump(Set.of(IpFamily.V4, IpFamily.V6), e -> e.original().protocol() == UDP
        && (e.original().source().equals(v4(3)) || e.original().source().equals(v6(2)))).entries().stream()
        .map(ConntrackEntry::key).toList();
    Set<String> before = tracked();
    assertThat(keys).hasSize(2);

    assertThat(conntrack.delete(keys)).containsExactly(ConntrackAnswer.DONE, ConntrackAnswer.DONE);

    assertThat(tracked()).isEqualTo(before.stream().filter(f -> !f.startsWith(v4(3).addressText() + ":")
        && !f.startsWith("[" + v6(2).addressText() + "]:")).collect(Collectors.toCollection(TreeSet::new)));
    assertThat(conntrack.delete(keys)).allMatch(ConntrackAnswer::gone);
  }

  /**
   * A kernel that refuses every request carrying {@code CTA_FILTER} with EINVAL (as 5.14 to 6.11 refuse the filtered
   * delete): the narrowed dump comes back refused with that errno and no entries, the whole dump still answers.
   */
  @Test
  void aKernelThatRefusesTheNarrowedDumpIsReportedByItsErrno() {
    AtomicInteger refused = new AtomicInteger();
    Conntrack conntrack = new Conntrack(kernel.thread(), where -> new RefusesFilters(ConntrackChannel.kernel(where),
        refused));

    ConntrackDump narrowed = conntrack.dumpFrom(v4(2), e -> true);
    ConntrackDump whole = conntrack.dump(Set.of(IpFamily.V4), e -> e.original().protocol() == UDP);

    assertThat(narrowed).isEqualTo(ConntrackDump.failed(ConntrackAnswer.refused(NetlinkException.EINVAL)));
    assertThat(whole.entries()).hasSize(SOURCES);
    assertThat(refused).hasValue(1);
  }

  /** The kernel, except that a request with a {@code CTA_FILTER} attribute is answered EINVAL and not passed on. */
  private static final class RefusesFilters implements ConntrackChannel {
    private final ConntrackChannel kernel;
    private final AtomicInteger refused;
    private final ArrayDeque<byte[]> answers = new ArrayDeque<>();

    RefusesFilters(ConntrackChannel kernel, AtomicInteger refused) {
      this.kernel = kernel;
      this.refused = refused;
    }

    @Override
    public void send(ByteBuffer direct, int length) {
      if (hasFilter(direct, length)) {
        refused.incrementAndGet();
        ByteBuffer err = ByteBuffer.allocate(36).order(ByteOrder.nativeOrder());
        err.putInt(36).putShort((short) NetlinkConstants.NLMSG_ERROR).putShort((short) 0)
            .putInt(direct.getInt(8)).putInt(0).putInt(-22);
        for (int i = 0; i < 16; i++) {
          err.put(direct.get(i));
        }
        answers.add(err.array());
        return;
      }
      kernel.send(direct, length);
    }

    @Override
    public int receive(ByteBuffer direct) {
      byte[] a = answers.poll();
      if (a == null) {
        return kernel.receive(direct);
      }
      direct.clear();
      direct.put(a);
      return a.length;
    }

    @Override
    public void close() {
      kernel.close();
    }

    private static boolean hasFilter(ByteBuffer b, int length) {
      int pos = 20; // nlmsghdr + nfgenmsg
      while (pos + 4 <= length) {
        int len = Short.toUnsignedInt(b.getShort(pos));
        int type = Short.toUnsignedInt(b.getShort(pos + 2)) & NetlinkConstants.NLA_TYPE_MASK;
        if (type == 25 /* CTA_FILTER */) {
          return true;
        }
        if (len < 4) {
          return false;
        }
        pos += (len + 3) & ~3;
      }
      return false;
    }
  }

  private static ConntrackEntry only(ConntrackDump dump) {
    assertThat(dump.entries()).hasSize(1);
    return dump.entries().get(0);
  }

  /** The dump's entries as {@link ConntrackTuple#toString()} prints their original tuples. */
  private static Set<String> flows(ConntrackDump dump) {
    return dump.entries().stream().map(e -> e.original().toString().substring("udp ".length()))
        .collect(Collectors.toCollection(TreeSet::new));
  }

  /** The tracked UDP flows, as "source:port > destination:port" ({@code [address]:port} for IPv6). */
  private Set<String> tracked() {
    Set<String> flows = new TreeSet<>();
    for (String line : kernel.tracked()) {
      Matcher m = FLOW.matcher(line);
      if (m.find() && m.group(1).equals("udp")) {
        flows.add(endpoint(m.group(2), m.group(4)) + " > " + endpoint(m.group(3), m.group(5)));
      }
    }
    return flows;
  }

  private static String endpoint(String address, String port) {
    IpPrefix a = IpPrefix.parseHost(address);
    return (a.family() == IpFamily.V6 ? "[" + a.addressText() + "]" : a.addressText()) + ":" + port;
  }

  private static IpPrefix v4(int i) {
    return IpPrefix.parseHost("10.77.0." + i);
  }

  private static IpPrefix v6(int i) {
    return IpPrefix.parseHost("fd77::" + Integer.toHexString(i));
  }
}
