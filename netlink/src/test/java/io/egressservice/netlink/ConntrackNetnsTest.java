package io.egressservice.netlink;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.ip.IpPrefix;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link Conntrack#restartFlowsLeavingTheCluster} with no in-cluster prefixes: one dump and a delete per matching
 * entry remove exactly the flows of the given sources, few or many, in both families, and leave every other flow
 * alone. The oracle is the kernel's {@code /proc/net/nf_conntrack} of the namespace.
 */
class ConntrackNetnsTest {
  private static final Pattern SRC = Pattern.compile("^\\S+\\s+\\d+\\s+\\S+\\s+\\d+\\s+\\d+\\s+(?:\\S+\\s+)?src=(\\S+)");
  @RegisterExtension
  final ConntrackNamespace kernel = new ConntrackNamespace("ct");

  @BeforeEach
  void setUp() {
    for (int i = 1; i <= 30; i++) {
      kernel.onLoopback("10.77.0." + i, "fd77::" + Integer.toHexString(i));
    }
  }

  @Test
  void fewIpv4SourcesEndOnlyTheirFlows() {
    flowsFrom(30);
    List<IpPrefix> gone = List.of(v4(3), v4(7));

    assertThat(new Conntrack().restartFlowsLeavingTheCluster(kernel.thread(), gone, List.of())).isEmpty();

    assertThat(trackedSources()).isEqualTo(allBut(gone));
  }

  /**
   * The kernel's IPv6 source filter matches inverted (Linux 6.18): a filtered delete of one IPv6 source removed
   * every other IPv6 flow of the node and kept that source's own.
   */
  @Test
  void anIpv6SourceEndsItsOwnFlowsAndNoOther() {
    flowsFrom(30);
    List<IpPrefix> gone = List.of(v6(5));

    assertThat(new Conntrack().restartFlowsLeavingTheCluster(kernel.thread(), gone, List.of())).isEmpty();

    assertThat(trackedSources()).isEqualTo(allBut(gone));
  }

  @Test
  void manySourcesEndEveryFlowOfTheirs() {
    flowsFrom(30);
    flowsFrom(30); // two flows (source ports) per source: each is deleted
    List<IpPrefix> gone = new ArrayList<>();
    for (int i = 1; i <= 12; i++) {
      gone.add(v4(i));
      gone.add(v6(i + 10));
    }
    gone.add(IpPrefix.parseHost("10.77.9.9")); // a source without flows: nothing to delete, no error

    assertThat(new Conntrack().restartFlowsLeavingTheCluster(kernel.thread(), gone, List.of())).isEmpty();

    assertThat(trackedSources()).isEqualTo(allBut(gone));
  }

  /** One UDP datagram from each address 1..n of both families to the namespace's first address. */
  private void flowsFrom(int n) {
    kernel.thread().call(() -> {
      for (int i = 1; i <= n; i++) {
        ConntrackNamespace.send(v4(i), "10.77.0.1");
        ConntrackNamespace.send(v6(i), "fd77::1");
      }
      return null;
    });
  }

  private Set<String> trackedSources() {
    Set<String> sources = new TreeSet<>();
    for (String line : kernel.tracked()) {
      Matcher m = SRC.matcher(line);
      if (line.contains(" udp ") && m.find()) {
        sources.add(IpPrefix.parseHost(m.group(1)).addressText());
      }
    }
    return sources;
  }

  private static Set<String> allBut(List<IpPrefix> gone) {
    Set<String> expected = new TreeSet<>();
    for (int i = 1; i <= 30; i++) {
      expected.add(v4(i).addressText());
      expected.add(v6(i).addressText());
    }
    gone.forEach(p -> expected.remove(p.addressText()));
    return expected;
  }

  private static IpPrefix v4(int i) {
    return IpPrefix.parseHost("10.77.0." + i);
  }

  private static IpPrefix v6(int i) {
    return IpPrefix.parseHost("fd77::" + Integer.toHexString(i));
  }
}
