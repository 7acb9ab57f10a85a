package io.egressservice.netlink;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * An answer to a restarted flow that arrives before the flow's next packet (the old host un-NATs the answers to
 * what it sent before a planned move and routes them to the pod) makes an entry of its own, with the outside host
 * as the original source: the pod's flow then runs in that entry's reply direction, which takes no SNAT and which
 * the no-host guard ({@code ct direction original}) lets out with the pod's own address. That entry's original tuple
 * is the deleted entry's reply tuple, so a delete by that tuple ends exactly it (what the agent's restart does after
 * each delete); a dump by the pod's source never sees it. The oracle is the kernel's {@code /proc/net/nf_conntrack}
 * and an nft counter of the pod's packets by direction.
 */
class ConntrackTakeoverNetnsTest {
  private static final IpPrefix POD = IpPrefix.parseHost("10.66.0.5");
  private static final String EXTERNAL = "192.0.2.10";
  private static final int POD_PORT = 40000;
  private static final int OTHER_POD_PORT = 40001;
  private static final int ECHO = 7000;
  @RegisterExtension
  final ConntrackNamespace kernel = new ConntrackNamespace("ctt");

  @BeforeEach
  void setUp() {
    kernel.onLoopback(POD.addressText(), EXTERNAL);
    // Counts the pod's packets out by direction (the guard matches the original one).
    kernel.ns().exec("nft", "add counter inet ct_test reply; add rule inet ct_test out ip saddr " + POD.addressText()
        + " udp sport " + POD_PORT + " ct direction reply counter name reply");
  }

  @Test
  void theEntryAnAnswerMakesBeforeTheNextPacketIsNamedByTheDeletedEntrysReplyTuple() {
    Conntrack conntrack = new Conntrack(kernel.thread());
    send(POD.addressText(), POD_PORT, EXTERNAL, ECHO); // the steered flow, its identity NAT bound
    // a flow from outside to the pod's own address, which must keep its entry (answers leave with that address)
    send(EXTERNAL, ECHO, POD.addressText(), OTHER_POD_PORT);
    List<ConntrackEntry> found = fromPod(conntrack);
    assertThat(found).hasSize(1).noneMatch(ConntrackEntry::sourceTranslated);
    ConntrackEntry restarted = found.get(0);
    assertThat(conntrack.delete(List.of(restarted.key()))).containsExactly(ConntrackAnswer.DONE);

    send(EXTERNAL, ECHO, POD.addressText(), POD_PORT); // the late answer, before the pod's next packet
    send(POD.addressText(), POD_PORT, EXTERNAL, ECHO); // the pod's next packet: the takeover's reply direction
    assertThat(replyPackets()).as("the pod's packets in the reply direction (out of the guard's reach)").isEqualTo(1);
    assertThat(fromPod(conntrack)).as("a dump by the pod's source: the takeover's original source is outside")
        .isEmpty();
    assertThat(conntrack.dump(Set.of(IpFamily.V4), e -> e.original().destinationPort() == POD_PORT).entries())
        .extracting(ConntrackEntry::original).containsExactly(restarted.reply());

    assertThat(conntrack.delete(List.of(new ConntrackKey(restarted.reply(), restarted.zone()))))
        .containsExactly(ConntrackAnswer.DONE);

    assertThat(entries()).containsExactly(EXTERNAL + ":" + ECHO + " > " + POD.addressText() + ":" + OTHER_POD_PORT);
    send(POD.addressText(), POD_PORT, EXTERNAL, ECHO);
    assertThat(replyPackets()).as("the pod's next packet starts its flow over, in the original direction")
        .isEqualTo(1);
  }

  /** The UDP entries from the pod (a dump narrowed to its address). */
  private static List<ConntrackEntry> fromPod(Conntrack conntrack) {
    ConntrackDump dump = conntrack.dumpFrom(POD, e -> e.original().source().equals(POD)
        && e.original().protocol() == 17);
    assertThat(dump.answer().done()).isTrue();
    return dump.entries();
  }

  private void send(String from, int fromPort, String to, int toPort) {
    kernel.thread().call(() -> {
      try (DatagramSocket s = new DatagramSocket(null)) {
        s.setReuseAddress(true);
        s.bind(new InetSocketAddress(InetAddress.getByName(from), fromPort));
        byte[] b = {1};
        s.send(new DatagramPacket(b, 1, InetAddress.getByName(to), toPort));
      }
      return null;
    });
  }

  private long replyPackets() {
    return kernel.ns().json("nft", "-j", "list", "counter", "inet", "ct_test", "reply").path("nftables").get(1)
        .path("counter").path("packets").asLong();
  }

  /** The tracked UDP entries, as "source:port > destination:port" of their original direction. */
  private List<String> entries() {
    return kernel.tracked().stream().filter(l -> l.contains(" udp "))
        .map(l -> {
          String[] f = l.split("\\s+");
          String src = "";
          String dst = "";
          String sport = "";
          String dport = "";
          for (String x : f) {
            if (x.startsWith("src=") && src.isEmpty()) {
              src = x.substring(4);
            } else if (x.startsWith("dst=") && dst.isEmpty()) {
              dst = x.substring(4);
            } else if (x.startsWith("sport=") && sport.isEmpty()) {
              sport = x.substring(6);
            } else if (x.startsWith("dport=") && dport.isEmpty()) {
              dport = x.substring(6);
            }
          }
          return src + ":" + sport + " > " + dst + ":" + dport;
        }).sorted().toList();
  }
}
