package io.egressservice.netlink;

import static org.assertj.core.api.Assertions.assertThat;

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
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link Conntrack#restartFlowsLeavingTheCluster}: a changed endpoint's flows out of the cluster end, its flows to
 * in-cluster destinations (pods, ClusterIPs, nodes) keep their entries, on every kernel: also on one that refuses
 * requests carrying {@code CTA_FILTER} (as Linux before 6.12 refuses the filtered delete). The oracle is the
 * kernel's {@code /proc/net/nf_conntrack} of the namespace.
 */
class ConntrackRestartNetnsTest {
  private static final Pattern FLOW =
      Pattern.compile("^\\S+\\s+\\d+\\s+(\\S+)\\s+\\d+\\s+\\d+\\s+(?:\\S+\\s+)?src=(\\S+)\\s+dst=(\\S+)");
  private static final String POD_V4 = "10.88.0.1";
  private static final String POD_V6 = "fd88::1";
  private static final String EXTERNAL_V4 = "192.0.2.1";
  private static final String EXTERNAL_V6 = "2001:db8::1";
  private static final List<IpPrefix> IN_CLUSTER = List.of(IpPrefix.parse("10.88.0.0/16"), IpPrefix.parse("fd88::/32"));
  private static final int SOURCES = 4;
  @RegisterExtension
  final ConntrackNamespace kernel = new ConntrackNamespace("ctr");

  @BeforeEach
  void setUp() {
    kernel.onLoopback(POD_V4, EXTERNAL_V4, POD_V6, EXTERNAL_V6);
    for (int i = 1; i <= SOURCES; i++) {
      kernel.onLoopback(v4(i).addressText(), v6(i).addressText());
    }
    flows();
  }

  @Test
  void changedEndpointsLoseTheirFlowsOutOfTheClusterAndKeepTheirInClusterFlows() {
    Set<String> before = tracked();

    List<String> errors = new Conntrack().restartFlowsLeavingTheCluster(kernel.thread(), List.of(v4(2), v6(3)), IN_CLUSTER);

    assertThat(errors).isEmpty();
    assertThat(tracked()).isEqualTo(without(before, flow(v4(2), EXTERNAL_V4), flow(v6(3), EXTERNAL_V6)));
  }

  /** One IPv4 source: the dump is narrowed to it in the kernel (Linux 5.8+), with the same outcome. */
  @Test
  void oneChangedIpv4EndpointLosesOnlyItsFlowsOutOfTheCluster() {
    Set<String> before = tracked();
    Conntrack conntrack = new Conntrack();

    assertThat(conntrack.restartFlowsLeavingTheCluster(kernel.thread(), List.of(v4(1)), IN_CLUSTER)).isEmpty();

    assertThat(tracked()).isEqualTo(without(before, flow(v4(1), EXTERNAL_V4)));
    assertThat(conntrack.filteredDumpRefused()).as("this kernel takes the filtered dump").isFalse();
  }

  /**
   * A kernel that refuses every request carrying {@code CTA_FILTER} with EINVAL (as 5.14 to 6.11 refuse the filtered
   * delete, which used to do this work): the flows still go, through a whole dump; it is asked once, not on every
   * restart.
   */
  @Test
  void flowsOfAChangedEndpointGoOnKernelsWithoutFilteredDelete() {
    Set<String> before = tracked();
    AtomicInteger refused = new AtomicInteger();
    Conntrack conntrack = new Conntrack(where -> new RefusesFilters(ConntrackChannel.kernel(where), refused));

    assertThat(conntrack.restartFlowsLeavingTheCluster(kernel.thread(), List.of(v4(2)), IN_CLUSTER)).isEmpty();
    assertThat(tracked()).isEqualTo(without(before, flow(v4(2), EXTERNAL_V4)));
    assertThat(conntrack.restartFlowsLeavingTheCluster(kernel.thread(), List.of(v4(3)), IN_CLUSTER)).isEmpty();

    assertThat(tracked()).isEqualTo(without(before, flow(v4(2), EXTERNAL_V4), flow(v4(3), EXTERNAL_V4)));
    assertThat(refused).as("filtered requests the old kernel refused").hasValue(1);
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

  /** One UDP datagram from each source of both families to the in-cluster and the external destination. */
  private void flows() {
    kernel.thread().call(() -> {
      for (int i = 1; i <= SOURCES; i++) {
        ConntrackNamespace.send(v4(i), POD_V4);
        ConntrackNamespace.send(v4(i), EXTERNAL_V4);
        ConntrackNamespace.send(v6(i), POD_V6);
        ConntrackNamespace.send(v6(i), EXTERNAL_V6);
      }
      return null;
    });
    assertThat(tracked()).hasSize(4 * SOURCES);
  }

  /** The tracked UDP flows of the test's sources, as "source > destination". */
  private Set<String> tracked() {
    Set<String> flows = new TreeSet<>();
    for (String line : kernel.tracked()) {
      Matcher m = FLOW.matcher(line);
      if (m.find() && m.group(1).equals("udp")) {
        flows.add(flow(IpPrefix.parseHost(m.group(2)), IpPrefix.parseHost(m.group(3)).addressText()));
      }
    }
    return flows;
  }

  private static String flow(IpPrefix source, String destination) {
    return source.addressText() + " > " + IpPrefix.parseHost(destination).addressText();
  }

  private static Set<String> without(Set<String> all, String... gone) {
    Set<String> out = new TreeSet<>(all);
    for (String g : gone) {
      assertThat(out).as("a flow the test expects to end").contains(g);
      out.remove(g);
    }
    return out;
  }

  private static IpPrefix v4(int i) {
    return IpPrefix.parseHost("10.77.0." + i);
  }

  private static IpPrefix v6(int i) {
    return IpPrefix.parseHost("fd77::" + Integer.toHexString(i));
  }
}
