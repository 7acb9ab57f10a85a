package io.egressservice.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.ip.IpFamily;
import io.egressservice.testbed.Addresses;
import io.egressservice.testbed.AgentProcess;
import io.egressservice.testbed.Cluster;
import io.egressservice.testbed.Namespace;
import io.egressservice.testbed.Traffic;
import io.egressservice.testing.Privileges;
import io.fabric8.kubernetes.api.model.Event;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.ovn.k8s.v1.EgressServiceSpec.SourceIPBy;

/**
 * The allocator's failover where its own view is the weak part, with real agent processes and packets: a lossy path
 * from the allocator to every node must not empty or move any host, and a leader that dies with the host must be
 * replaced, and the host with it, within seconds.
 */
class AllocatorPartitionClusterTest {
  @BeforeEach
  void privileged() {
    Privileges.assumeNetAdmin();
  }

  /**
   * 50 % loss of the allocator's probes to every node (its packets to TCP 9464 from the control plane's address, in
   * the lan namespace where it probes from) for 20 s: the nodes and agents are fine, so the host stays, and the
   * streams keep leaving with the LB IP, none dropped by the no-host guard.
   */
  @Test
  void allocatorCutOffFromNodesKeepsTheHosts() {
    try (FailoverScenario s = new FailoverScenario("drop")) {
      String host = s.awaitSteady(Duration.ofSeconds(30));
      await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(100)).until(() ->
          s.allocator().allocator().probedNodes().size() == 3);
      double droppedBefore = noHostDrops(s.cluster());
      Namespace lan = s.cluster().netns("lan");
      long t0 = System.nanoTime();
      List<String> hostsSeen = new ArrayList<>();
      boolean suspected = false;
      ProbeLoss loss = ProbeLoss.start(lan, 50);
      try {
        long end = t0 + Duration.ofSeconds(20).toNanos();
        while (System.nanoTime() < end) {
          String h = s.host();
          if (hostsSeen.isEmpty() || !hostsSeen.get(hostsSeen.size() - 1).equals(h)) {
            hostsSeen.add(h);
          }
          suspected |= s.allocator().allocator().selfSuspected();
          pause(100);
        }
      } finally {
        loss.close();
      }
      // the loss is gone: nothing moves afterwards either (no drain of a node whose misses are still counted),
      // and the suspicion ends once the misses have aged out of the window (5 s) and it was clear for 5 s more
      long end = System.nanoTime() + Duration.ofSeconds(20).toNanos();
      while (System.nanoTime() < end && s.allocator().allocator().selfSuspected()) {
        String h = s.host();
        if (!hostsSeen.get(hostsSeen.size() - 1).equals(h)) {
          hostsSeen.add(h);
        }
        pause(100);
      }
      long t1 = System.nanoTime();
      assertThat(hostsSeen).as("status.host during 20 s of 50 % probe loss to every node and until the suspicion ended")
          .containsExactly(host);
      assertThat(suspected).as("the allocator suspected its own path").isTrue();
      assertThat(s.allocator().allocator().selfSuspected()).as("still suspecting itself 20 s after the loss ended")
          .isFalse();
      assertThat(s.allocator().allocator().unreachableNodes()).as("nodes drained").isEmpty();
      assertThat(noHostDrops(s.cluster()) - droppedBefore).as("datagrams dropped by the no-host guard").isZero();
      assertThat(s.lostBetween(t0, t1 - Duration.ofSeconds(1).toNanos())).as("datagrams lost").isZero();
      assertThat(s.leakedSince(t0)).as("datagrams seen outside with another source").isZero();
      List<Event> events = s.cluster().api().client().v1().events().inNamespace(AgentProcess.LEASE_NAMESPACE)
          .list().getItems();
      assertThat(events).as("Events on the allocator's Lease").anySatisfy(e -> {
        assertThat(e.getInvolvedObject().getKind()).isEqualTo("Lease");
        assertThat(e.getReason()).isEqualTo("AllocatorSelfSuspected");
      });
    }
  }

  /**
   * The agents run the allocator (kube-vip's lease: 5 s, renewed every second). The leader's node is the host; it
   * loses power, and with it the leader. The followers already probe the host, so whoever takes the Lease over
   * moves the service in its first pass: a new host, and the streams leave there with the LB IP, within 6 s.
   */
  @Test
  void leaderDyingWithItsHostFailsOverWithinSixSeconds() {
    String lbIp = Addresses.lbIp(5, IpFamily.V4);
    List<Traffic.Stream> streams = new ArrayList<>();
    try (Cluster c = Cluster.standard().agentArgs("--no-host=drop").start()) {
      try {
        c.api().createLoadBalancer("web", "172.30.0.10", "fd02::10", List.of(lbIp, Addresses.lbIp(5, IpFamily.V6)),
            List.of(c.pod("pod-a1"), c.pod("pod-b1"), c.pod("pod-c1")));
        String leader = await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200))
            .until(() -> holder(c), Optional::isPresent).orElseThrow();
        String leaderNode = leader.substring("egress-service-agent-".length());
        // the leader's node becomes the host, then the selector goes: the host stays while it qualifies
        c.api().applyEgressService("web", SourceIPBy.LOADBALANCERIP, "", Optional.of(leaderNode));
        await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(100))
            .until(() -> c.api().host("web").equals(Optional.of(leaderNode)));
        c.api().applyEgressService("web", SourceIPBy.LOADBALANCERIP, "", Optional.empty());
        List<String> senders = c.nodes().stream().filter(n -> !n.name().equals(leaderNode))
            .map(n -> n.pods().get(0).name()).toList();
        String oldWhere = "ext-" + leaderNode.substring(5) + "1";
        for (String p : senders) {
          await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200)).until(() ->
              c.traffic().udp(p, Addresses.EXTERNAL_V4).seen().stream()
                  .anyMatch(x -> x.source().equals(lbIp) && x.where().equals(oldWhere)));
        }
        for (String p : senders) {
          streams.add(c.traffic().stream(p, Addresses.EXTERNAL_V4, Duration.ofMillis(10)));
        }
        // every follower probes the host (its cache shows status.host) before the power goes
        await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(100)).until(() ->
            c.nodes().stream().filter(n -> !n.name().equals(leaderNode))
                .allMatch(n -> n.agent().metric("egress_service_agent_allocator_leader") == 0));
        pause(2000);
        assertThat(holder(c)).as("Lease holder before the power-off").contains(leader);
        assertThat(c.api().host("web")).contains(leaderNode);

        long t0 = System.nanoTime();
        c.node(leaderNode).powerOff();
        await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(20)).until(() ->
            c.api().host("web").filter(h -> !h.equals(leaderNode)).isPresent());
        double hostSeconds = (System.nanoTime() - t0) / 1e9;
        String newHost = c.api().host("web").orElseThrow();
        String where = "ext-" + newHost.substring(5) + "1";
        List<Double> recovery = new ArrayList<>();
        for (Traffic.Stream st : streams) {
          Traffic.Arrival first = await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(20))
              .until(() -> st.arrivals().stream()
                  .filter(a -> a.sentNanos() > t0 && a.where().equals(where) && a.source().equals(lbIp))
                  .findFirst(), Optional::isPresent).orElseThrow();
          recovery.add((first.sentNanos() - t0) / 1e9);
        }
        System.out.printf("leader %s died with its host: new leader %s, status.host %s after %.2f s, streams via %s"
            + " after %s s%n", leader, holder(c).orElse("?"), newHost, hostSeconds, where, recovery);
        long leaked = streams.stream().flatMap(st -> st.arrivals().stream())
            .filter(a -> a.sentNanos() > t0 && !a.source().equals(lbIp)).count();
        assertThat(leaked).as("datagrams seen outside with a source other than the LB IP").isZero();
        assertThat(hostSeconds).as("seconds from the power-off to the new status.host").isLessThan(6.0);
        assertThat(recovery).as("seconds from the power-off to each stream leaving via %s with the LB IP", where)
            .allSatisfy(r -> assertThat(r).isLessThan(6.0));
      } finally {
        streams.forEach(Traffic.Stream::close);
      }
    }
  }

  /** The Lease's holder, as the agents' allocators wrote it. */
  private static Optional<String> holder(Cluster c) {
    return LeaseHolder.of(c);
  }

  private static double noHostDrops(Cluster c) {
    return NoHostDrops.total(c);
  }

  private static void pause(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
