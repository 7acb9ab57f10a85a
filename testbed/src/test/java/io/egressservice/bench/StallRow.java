package io.egressservice.bench;

import static org.awaitility.Awaitility.await;

import io.egressservice.cluster.FailoverScenario;
import io.egressservice.testbed.Cluster;
import java.time.Duration;
import java.util.Locale;
import java.util.Optional;

/**
 * The host's agent stalls (SIGSTOP for 8 s, then SIGCONT, always: the resume is in a finally): host moves during
 * the stall and 2 s after, datagrams lost and seen with another source. The agent answers again before the next
 * stall, and 5 s pass (the allocator's view of the stall ages out).
 */
final class StallRow {
  private static final Duration STALL = Duration.ofSeconds(8);

  private StallRow() {}

  static RowResult run(String noHost, int runs) {
    Disruptions d = new Disruptions();
    Optional<String> stopped = Optional.empty();
    try (FailoverScenario s = new FailoverScenario(noHost)) {
      for (int i = 1; i <= runs; i++) {
        String host = s.awaitSteady(Duration.ofSeconds(30));
        Cluster.Node node = s.cluster().node(host);
        HostSequence watch = new HostSequence(s);
        int failoversBefore = s.allocator().allocator().failoverSeconds().size();
        long t0 = System.nanoTime();
        long t1;
        node.suspendAgent();
        try {
          watch.pollFor(STALL.toMillis(), 100);
        } finally {
          node.resumeAgent();
          t1 = System.nanoTime();
        }
        watch.pollFor(2000, 100);
        long l = s.lostBetween(t0, t1);
        long k = s.leakedSince(t0);
        d.count(watch.moves(), l, k);
        System.out.printf(Locale.ROOT, "stall %d: agent of host %s stopped %.1f s: status.host %s, failovers %d, "
            + "lost %d, leaked %d%n", i, host, (t1 - t0) / 1e9, watch.seen(),
            s.allocator().allocator().failoverSeconds().size() - failoversBefore, l, k);
        await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(100)).ignoreExceptions()
            .until(() -> !node.agent().metrics().isEmpty());
        d.completed(i);
        if (i < runs) {
          Pause.ms(5000); // the stall's probe results age out of the allocator's view before the next one
        }
      }
    } catch (RuntimeException e) {
      stopped = Optional.of("run " + (d.done + 1) + ": " + e);
    }
    return d.result("stall", String.format(Locale.ROOT, "%d x %d s SIGSTOP of the host's agent: %d moves, "
        + "lost %d, leaked %d", d.done, STALL.toSeconds(), d.moves, d.lost, d.leaked), stopped);
  }
}
