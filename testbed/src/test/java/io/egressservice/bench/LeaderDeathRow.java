package io.egressservice.bench;

import io.egressservice.cluster.FailoverScenario;
import io.egressservice.cluster.LeaderOnHost;
import io.egressservice.cluster.LeaseHolder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * The leading allocator dies with the host: the agents run the allocator (kube-vip's lease timings), the leader's node
 * is made the host ({@link LeaderOnHost}) and powered off; per run, the time to the new status.host and until the
 * streams of the live nodes leave through it with the LB IP. The node is powered on again before the next run, and
 * the next run's host is the new leader's node.
 */
final class LeaderDeathRow {
  private static final String ROW = "leader death";

  private LeaderDeathRow() {}

  static RowResult run(String noHost, int runs) {
    String goal = "every stream back <= 6 s, 0 leaked";
    List<Double> hostSeconds = new ArrayList<>();
    List<Double> worst = new ArrayList<>();
    long leaked = 0;
    int done = 0;
    int flowsBack = 0;
    java.util.concurrent.atomic.AtomicInteger renewed = new java.util.concurrent.atomic.AtomicInteger();
    java.util.concurrent.atomic.AtomicLong renewedLeaked = new java.util.concurrent.atomic.AtomicLong();
    Optional<String> stopped = Optional.empty();
    try (FailoverScenario s = FailoverScenario.withAllocatorInAgents(noHost)) {
      for (int i = 1; i <= runs; i++) {
        int run = i;
        String leaderNode = LeaderOnHost.arrange(s, r -> {
          renewed.incrementAndGet();
          renewedLeaked.addAndGet(r.seenWithAnotherSource());
          System.out.printf("leader death %d: after the move to the leader's node, the stream of %s does not arrive "
              + "via %s with the LB IP (last seen %s; %d of its datagrams seen with another source): replaced by a "
              + "new flow%n", run, r.pod(), s.host(), r.lastSeen(), r.seenWithAnotherSource());
        });
        FailoverScenario.Outcome o = s.powerOffHost(Duration.ofSeconds(20));
        hostSeconds.add(o.hostSeconds());
        worst.add(o.max());
        leaked += o.leaked();
        System.out.printf(Locale.ROOT, "leader death %d: leader and host %s powered off, new leader %s, status.host "
            + "%s after %.2f s, streams back after %s s, leaked %d%n", i, leaderNode,
            LeaseHolder.node(s.cluster()).orElse("?"), o.newHost(), o.hostSeconds(), Stats.seconds(o.recoverySeconds()),
            o.leaked());
        if (PowerOn.againAndFlowBack(s, ROW, i, o.oldHost())) {
          flowsBack++;
        }
        done = i;
      }
    } catch (RuntimeException e) {
      stopped = Optional.of("run " + (done + 1) + ": " + e);
    }
    return new RowResult("leader", String.format(Locale.ROOT, "%d runs: status.host after median %.2f s, max %.2f s; "
        + "slowest stream per run %s s; leaked %d; powered on again, the old host's own pod's flow came back in "
        + "%d of %d; after the planned moves that set up a run, streams not via the host with the LB IP "
        + "(replaced) %d, their datagrams seen with another source %d", done, Stats.median(hostSeconds),
        Stats.max(hostSeconds), Stats.seconds(worst), leaked, flowsBack, done, renewed.get(), renewedLeaked.get()), goal, done > 0 && Stats.max(worst) <= 6.0 && leaked == 0, stopped);
  }
}
