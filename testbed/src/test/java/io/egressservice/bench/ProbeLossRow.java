package io.egressservice.bench;

import static org.awaitility.Awaitility.await;

import io.egressservice.cluster.FailoverScenario;
import io.egressservice.cluster.NoHostDrops;
import io.egressservice.cluster.ProbeLoss;
import java.time.Duration;
import java.util.Locale;
import java.util.Optional;

/**
 * 50 % loss on the allocator's path to every node ({@link ProbeLoss}) for a window (60 s by default), then until the
 * allocator stops suspecting itself (at most 30 s more): host moves, datagrams lost and seen with another source,
 * datagrams the no-host guard dropped. Windows run one after another on the same cluster.
 */
final class ProbeLossRow {
  private static final int PERCENT = 50;
  private static final Duration CLEAR_LIMIT = Duration.ofSeconds(30);

  private ProbeLossRow() {}

  static RowResult run(String noHost, int windows, Duration window) {
    Disruptions t = new Disruptions();
    double guardDrops = 0;
    int suspectedWindows = 0;
    Optional<String> stopped = Optional.empty();
    try (FailoverScenario s = new FailoverScenario(noHost)) {
      for (int i = 1; i <= windows; i++) {
        s.awaitSteady(Duration.ofSeconds(30));
        await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(100))
            .until(() -> s.allocator().allocator().probedNodes().size() == 3);
        double dropsBefore = NoHostDrops.total(s.cluster());
        HostSequence watch = new HostSequence(s);
        boolean suspected = false;
        long t0 = System.nanoTime();
        try (ProbeLoss loss = ProbeLoss.start(s.cluster().netns("lan"), PERCENT)) {
          long end = t0 + window.toNanos();
          while (System.nanoTime() < end) {
            watch.poll();
            suspected |= s.allocator().allocator().selfSuspected();
            Pause.ms(100);
          }
        }
        long clearEnd = System.nanoTime() + CLEAR_LIMIT.toNanos();
        while (System.nanoTime() < clearEnd && s.allocator().allocator().selfSuspected()) {
          watch.poll();
          Pause.ms(100);
        }
        long t1 = System.nanoTime();
        Pause.ms(500);
        watch.poll();
        long l = s.lostBetween(t0, t1);
        long k = s.leakedSince(t0);
        double d = NoHostDrops.total(s.cluster()) - dropsBefore;
        t.count(watch.moves(), l, k);
        guardDrops += d;
        suspectedWindows += suspected ? 1 : 0;
        System.out.printf(Locale.ROOT, "probe loss %d: %d s of %d %% loss and %.1f s until the suspicion ended: "
            + "status.host %s, allocator suspected itself: %s, unreachable %s, lost %d, leaked %d, no-host drops "
            + "%.0f%n", i, window.toSeconds(), PERCENT, (t1 - t0 - window.toNanos()) / 1e9, watch.seen(), suspected,
            s.allocator().allocator().unreachableNodes(), l, k, d);
        t.completed(i);
      }
    } catch (RuntimeException e) {
      stopped = Optional.of("window " + (t.done + 1) + ": " + e);
    }
    return t.result("loss", String.format(Locale.ROOT, "%d x %d s of %d %% probe loss to every node: %d moves, "
        + "lost %d, leaked %d, no-host drops %.0f, self-suspicion in %d of %d", t.done, window.toSeconds(), PERCENT,
        t.moves, t.lost, t.leaked, guardDrops, suspectedWindows, t.done), stopped);
  }
}
