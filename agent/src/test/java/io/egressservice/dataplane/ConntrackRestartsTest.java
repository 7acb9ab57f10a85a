package io.egressservice.dataplane;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.ip.IpPrefix;
import io.egressservice.kernel.fake.FakeConntrack;
import io.egressservice.kernel.fake.FakeConntrack.Narrowing;
import io.egressservice.netlink.ConntrackAnswer;
import io.egressservice.netlink.ConntrackEntry;
import io.egressservice.netlink.ConntrackKey;
import io.egressservice.netlink.ConntrackTuple;
import io.egressservice.netlink.NetlinkException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * Which conntrack entries a change of endpoints' treatment deletes, in which order, and how failures come back, on
 * an in-memory table (no root): a changed source's flows out of the cluster go, its flows inside it and every other
 * source's flows stay; a few IPv4 sources are dumped one by one first; kernels that ignore or refuse the narrowed
 * dump lose the same flows; the entries that took over a restarted flow without SNAT go by its reply tuple, in rounds
 * while they come back; every failure is a line, never an exception.
 */
class ConntrackRestartsTest {
  private static final int UDP = 17;
  private static final IpPrefix POD_V4 = host("10.88.0.1");
  private static final IpPrefix POD_V6 = host("fd88::1");
  private static final IpPrefix EXTERNAL_V4 = host("192.0.2.1");
  private static final IpPrefix EXTERNAL_V6 = host("2001:db8::1");
  private static final IpPrefix LB_IP = host("198.51.100.7");
  private static final List<IpPrefix> IN_CLUSTER = List.of(IpPrefix.parse("10.88.0.0/16"), IpPrefix.parse("fd88::/32"));
  private static final int SOURCES = 6;

  private final FakeConntrack table = new FakeConntrack();
  private final List<Long> pauses = new ArrayList<>();
  private final ConntrackRestarts restarts = new ConntrackRestarts(table, pauses::add);

  @Test
  void changedEndpointsLoseTheirFlowsOutOfTheClusterAndKeepEveryOtherFlow() {
    List<ConntrackEntry> before = flowsOfEverySource();

    assertThat(restarts.restartFlowsLeavingTheCluster(List.of(v4(2), v6(3)), IN_CLUSTER)).isEmpty();

    assertThat(table.entries()).containsExactlyElementsOf(without(before, out(v4(2), EXTERNAL_V4),
        out(v6(3), EXTERNAL_V6)));
  }

  /** A dual-stack endpoint's IPv4 flows restart before the table is walked for the rest (its IPv6 flows). */
  @Test
  void aFewIpv4SourcesAreDumpedOneByOneAndRestartedBeforeTheRestIsDumped() {
    flowsOfEverySource();

    restarts.restartFlowsLeavingTheCluster(List.of(v6(1), v4(2), v4(1)), IN_CLUSTER);

    assertThat(table.requests()).containsExactly(
        "dump from 10.77.0.1", "delete udp 10.77.0.1:40000 > 192.0.2.1:7000",
        "delete udp 192.0.2.1:7000 > 10.77.0.1:40000", // its takeover, if any (none here: ENOENT)
        "dump from 10.77.0.2", "delete udp 10.77.0.2:40000 > 192.0.2.1:7000",
        "delete udp 192.0.2.1:7000 > 10.77.0.2:40000",
        "dump V6", "delete udp [fd77::1]:40000 > [2001:db8::1]:7000",
        "delete udp [2001:db8::1]:7000 > [fd77::1]:40000");
  }

  /** Each narrowed dump still walks the whole table in the kernel: past the bound, one dump for all. */
  @Test
  void moreIpv4SourcesThanTheBoundTakeOneDumpOfTheirFamilies() {
    List<ConntrackEntry> before = flowsOfEverySource();
    List<IpPrefix> sources = IntStream.rangeClosed(1, ConntrackRestarts.FILTERED_DUMPS_MAX + 1)
        .mapToObj(ConntrackRestartsTest::v4).collect(java.util.stream.Collectors.toCollection(ArrayList::new));

    restarts.restartFlowsLeavingTheCluster(sources, IN_CLUSTER);
    sources.add(v6(1));
    restarts.restartFlowsLeavingTheCluster(sources, IN_CLUSTER);

    assertThat(table.requests()).filteredOn(r -> r.startsWith("dump")).containsExactly("dump V4", "dump V4 V6");
    assertThat(table.entries()).containsExactlyElementsOf(without(before,
        sources.stream().map(s -> out(s, s.family() == EXTERNAL_V4.family() ? EXTERNAL_V4 : EXTERNAL_V6))
            .toArray(ConntrackEntry[]::new)));
  }

  /** Before Linux 5.8 the narrowing is ignored and the whole table comes back: the match here keeps the rest. */
  @Test
  void aKernelThatIgnoresTheNarrowingLosesTheSameFlows() {
    List<ConntrackEntry> before = flowsOfEverySource();
    table.narrowing(Narrowing.IGNORED);

    assertThat(restarts.restartFlowsLeavingTheCluster(List.of(v4(2)), IN_CLUSTER)).isEmpty();

    assertThat(table.entries()).containsExactlyElementsOf(without(before, out(v4(2), EXTERNAL_V4)));
  }

  @Test
  void aKernelThatRefusesTheNarrowedDumpIsAskedOnceAndDumpedWholeFromThen() {
    List<ConntrackEntry> before = flowsOfEverySource();
    table.narrowing(Narrowing.REFUSED);

    assertThat(restarts.restartFlowsLeavingTheCluster(List.of(v4(2)), IN_CLUSTER)).isEmpty();
    assertThat(restarts.find(List.of(v4(3)), IN_CLUSTER).errors()).isEmpty();
    assertThat(restarts.restartFlowsLeavingTheCluster(List.of(v4(3)), IN_CLUSTER)).isEmpty();

    assertThat(table.requests()).filteredOn(r -> r.startsWith("dump"))
        .containsExactly("dump from 10.77.0.2", "dump V4", "dump V4", "dump V4");
    assertThat(restarts.filteredDumpRefused()).isTrue();
    assertThat(table.entries()).containsExactlyElementsOf(without(before, out(v4(2), EXTERNAL_V4),
        out(v4(3), EXTERNAL_V4)));
  }

  /** The dumps before the change, the deletes after it: a flow that starts in between waits for the later pass. */
  @Test
  void findDeletesNothingAndDeleteEndsWhatFindFoundAndNoMore() {
    List<ConntrackEntry> before = flowsOfEverySource();

    ConntrackRestarts.Found found = restarts.find(List.of(v4(2)), IN_CLUSTER);
    assertThat(table.entries()).isEqualTo(before);
    ConntrackEntry meanwhile = new ConntrackEntry(tuple(v4(2), 40001, EXTERNAL_V4, 7000),
        tuple(EXTERNAL_V4, 7000, v4(2), 40001));
    table.add(meanwhile);

    assertThat(found.size()).isEqualTo(1);
    assertThat(restarts.delete(found)).isEmpty();
    assertThat(table.entries()).hasSize(before.size()).contains(meanwhile).doesNotContain(out(v4(2), EXTERNAL_V4));
    assertThat(restarts.restartFlowsLeavingTheCluster(List.of(v4(2)), IN_CLUSTER)).isEmpty();
    assertThat(table.entries()).doesNotContain(meanwhile);
  }

  /**
   * An answer that arrives between a restart and the flow's next packet makes an entry whose original tuple is the
   * restarted entry's reply tuple: it goes, for flows that left with the pod's own address only (a SNATed flow's
   * answers come to the LB IP), and nothing else of the pod's goes with it.
   */
  @Test
  void theEntryThatTookOverAFlowWithoutSnatGoesByTheFlowsReplyTuple() {
    ConntrackEntry steered = new ConntrackEntry(tuple(POD_V4, 40000, EXTERNAL_V4, 7000),
        tuple(EXTERNAL_V4, 7000, POD_V4, 40000));
    ConntrackEntry snat = new ConntrackEntry(tuple(POD_V4, 40002, EXTERNAL_V4, 7000),
        tuple(EXTERNAL_V4, 7000, LB_IP, 40002));
    ConntrackEntry toThePod = new ConntrackEntry(tuple(EXTERNAL_V4, 7000, POD_V4, 40001),
        tuple(POD_V4, 40001, EXTERNAL_V4, 7000));
    table.add(steered, snat, toThePod);
    ConntrackRestarts.Found found = restarts.find(List.of(POD_V4), List.of());
    assertThat(found.entries()).containsExactly(steered, snat);
    assertThat(found.withoutSnat().entries()).containsExactly(steered);
    assertThat(restarts.delete(found)).isEmpty();
    ConntrackEntry takeover = new ConntrackEntry(steered.reply(), steered.original());
    table.add(takeover);

    assertThat(restarts.deleteTakeovers(found)).isEmpty();

    assertThat(table.entries()).containsExactly(toThePod);
    assertThat(table.requests()).filteredOn(r -> r.startsWith("delete")).containsExactly(
        "delete udp 10.88.0.1:40000 > 192.0.2.1:7000", "delete udp 10.88.0.1:40002 > 192.0.2.1:7000",
        "delete udp 192.0.2.1:7000 > 10.88.0.1:40000", // right after the delete: none yet (ENOENT, no error)
        "delete udp 192.0.2.1:7000 > 10.88.0.1:40000", // the takeover
        "delete udp 192.0.2.1:7000 > 10.88.0.1:40000"); // the next round finds none: done
  }

  /** Each deleted takeover lets a packet out that may draw another: rounds a few milliseconds apart, five at most. */
  @Test
  void takeoverRoundsGoOnWhileTheyFindOneAndStopAfterFive() {
    ConntrackEntry steered = new ConntrackEntry(tuple(POD_V4, 40000, EXTERNAL_V4, 7000),
        tuple(EXTERNAL_V4, 7000, POD_V4, 40000));
    ConntrackEntry takeover = new ConntrackEntry(steered.reply(), steered.original());
    table.add(steered);
    ConntrackRestarts.Found found = restarts.find(List.of(POD_V4), List.of());
    AtomicInteger answersInFlight = new AtomicInteger(2);
    table.add(takeover).afterEachRequest(() -> {
      if (answersInFlight.getAndDecrement() > 0) {
        table.add(takeover);
      }
    });

    assertThat(restarts.deleteTakeovers(found)).isEmpty();
    assertThat(takeoverDeletes()).as("three found, the fourth round finds none").isEqualTo(4);
    assertThat(pauses).as("a pause after each round that found one").containsExactly(3L, 3L, 3L);

    answersInFlight.set(Integer.MAX_VALUE);
    table.add(takeover);
    pauses.clear();
    assertThat(restarts.deleteTakeovers(found)).isEmpty();
    assertThat(takeoverDeletes() - 4).as("rounds at most").isEqualTo(5);
    assertThat(pauses).containsExactly(3L, 3L, 3L, 3L, 3L);
  }

  @Test
  void aDumpWithoutAnswerIsAnErrorLineAndTheOtherDumpsStillRun() {
    flowsOfEverySource();
    table.answerDumps(Optional.of(ConntrackAnswer.NO_ANSWER));

    List<String> errors = restarts.restartFlowsLeavingTheCluster(List.of(v4(1), v6(1)), IN_CLUSTER);

    assertThat(errors).containsExactly("conntrack dump of source 10.77.0.1: no answer within 2 s",
        "conntrack dump: no answer within 2 s");
    assertThat(restarts.find(List.of(v4(1)), IN_CLUSTER).errors()).hasSize(1);
  }

  /** One refused delete is reported with the flow's source; the other flows still go, a flow gone meanwhile is fine. */
  @Test
  void aRefusedDeleteIsAnErrorLineAndTheOtherFlowsStillGo() {
    List<ConntrackEntry> before = flowsOfEverySource();
    ConntrackRestarts.Found found = restarts.find(List.of(v4(1), v4(2), v4(3)), IN_CLUSTER);
    table.answerDelete(out(v4(2), EXTERNAL_V4).key(), ConntrackAnswer.refused(NetlinkException.EPERM));
    table.answerDelete(out(v4(3), EXTERNAL_V4).key(), ConntrackAnswer.NO_ANSWER);
    table.answerDelete(new ConntrackKey(out(v4(3), EXTERNAL_V4).reply(), 0), ConntrackAnswer.NO_ANSWER);

    assertThat(restarts.delete(found)).containsExactly("conntrack delete of a flow from 10.77.0.2: errno 1",
        "conntrack delete of a flow from 10.77.0.3: no answer within 2 s",
        "conntrack delete of a flow to 10.77.0.3: no answer within 2 s");

    assertThat(table.entries()).containsExactlyElementsOf(without(before, out(v4(1), EXTERNAL_V4)));
  }

  @Test
  void aTableThatCannotBeReachedIsAnErrorLineNeverAnException() {
    flowsOfEverySource();
    ConntrackRestarts.Found found = restarts.find(List.of(v4(1)), IN_CLUSTER);
    table.unreachable(new NetlinkException(NetlinkException.EPERM, "no CAP_NET_ADMIN"));

    assertThat(restarts.restartFlowsLeavingTheCluster(List.of(v4(1)), IN_CLUSTER))
        .containsExactly("conntrack restart: no CAP_NET_ADMIN");
    assertThat(restarts.find(List.of(v4(1)), IN_CLUSTER).errors()).containsExactly("conntrack restart: no CAP_NET_ADMIN");
    assertThat(restarts.delete(found)).containsExactly("conntrack restart: no CAP_NET_ADMIN");
    assertThat(restarts.deleteTakeovers(found)).containsExactly("conntrack restart: no CAP_NET_ADMIN");
  }

  @Test
  void noSourcesAskNothingOfTheKernel() {
    flowsOfEverySource();

    assertThat(restarts.restartFlowsLeavingTheCluster(List.of(), IN_CLUSTER)).isEmpty();
    assertThat(restarts.delete(restarts.find(List.of(), IN_CLUSTER))).isEmpty();

    assertThat(table.requests()).isEmpty();
  }

  /**
   * From each source of both families one flow to a pod (in the cluster), one to an external host (without SNAT, as
   * the agent's identity NAT leaves a steered flow), and one from the external host to the source.
   */
  private List<ConntrackEntry> flowsOfEverySource() {
    for (int i = 1; i <= SOURCES; i++) {
      table.add(out(v4(i), POD_V4), out(v4(i), EXTERNAL_V4), in(EXTERNAL_V4, v4(i)));
      table.add(out(v6(i), POD_V6), out(v6(i), EXTERNAL_V6), in(EXTERNAL_V6, v6(i)));
    }
    return table.entries();
  }

  private int takeoverDeletes() {
    return (int) table.requests().stream().filter(r -> r.equals("delete udp 192.0.2.1:7000 > 10.88.0.1:40000"))
        .count();
  }

  private static ConntrackEntry out(IpPrefix source, IpPrefix destination) {
    return new ConntrackEntry(tuple(source, 40000, destination, 7000), tuple(destination, 7000, source, 40000));
  }

  private static ConntrackEntry in(IpPrefix source, IpPrefix destination) {
    return new ConntrackEntry(tuple(source, 7001, destination, 80), tuple(destination, 80, source, 7001));
  }

  private static List<ConntrackEntry> without(List<ConntrackEntry> all, ConntrackEntry... gone) {
    List<ConntrackEntry> out = new ArrayList<>(all);
    for (ConntrackEntry g : gone) {
      assertThat(out).as("a flow the test expects to end").contains(g);
      out.remove(g);
    }
    return out;
  }

  private static ConntrackTuple tuple(IpPrefix source, int sourcePort, IpPrefix destination, int destinationPort) {
    return ConntrackTuple.of(UDP, source, sourcePort, destination, destinationPort);
  }

  private static IpPrefix host(String address) {
    return IpPrefix.parseHost(address);
  }

  private static IpPrefix v4(int i) {
    return host("10.77.0." + i);
  }

  private static IpPrefix v6(int i) {
    return host("fd77::" + Integer.toHexString(i));
  }
}
