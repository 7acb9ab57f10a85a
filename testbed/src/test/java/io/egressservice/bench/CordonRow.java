package io.egressservice.bench;

import static org.awaitility.Awaitility.await;

import io.egressservice.cluster.FailoverScenario;
import io.egressservice.cluster.OperatorMoves;
import java.time.Duration;
import java.util.Locale;
import java.util.Optional;

/**
 * A planned move: the host is cordoned while every node's pod sends a datagram every 2 ms; per run, the time to
 * the new status.host, then (once the old host let go and every stream arrives through the new host) the datagrams
 * of the move's window that were not seen anywhere, split into the steered streams and the new host's own pod (whose
 * NAT changes from steered to local), and those seen with another source. The previous host is uncordoned before
 * the next cordon, and the last one at the end. A stream that does not arrive through the host with the LB IP before
 * a cordon is reported (its datagrams seen with another source count as leaked) and replaced by a new flow.
 */
final class CordonRow {
  static final Duration INTERVAL = Duration.ofMillis(2);

  private CordonRow() {}

  static RowResult run(String noHost, int runs) {
    String goal = "0 lost";
    long lostSteered = 0;
    long lostOwn = 0;
    long leaked = 0;
    double slowest = 0;
    int done = 0;
    int renewed = 0;
    long receiverDrops = 0;
    Optional<String> stopped = Optional.empty();
    try (FailoverScenario s = FailoverScenario.withStreamInterval(noHost, INTERVAL)) {
      String cordoned = "";
      try {
        for (int i = 1; i <= runs; i++) {
          for (FailoverScenario.Renewed r : s.renewStuckStreams(Duration.ofSeconds(10))) {
            renewed++;
            leaked += r.seenWithAnotherSource();
            System.out.printf("cordon %d: before the cordon, the stream of %s does not arrive via %s with the LB IP "
                + "(last seen %s; %d of its datagrams seen with another source): replaced by a new flow%n", i,
                r.pod(), s.host(), r.lastSeen(), r.seenWithAnotherSource());
          }
          String steady;
          try {
            steady = s.awaitSteady(Duration.ofSeconds(15));
          } catch (RuntimeException e) {
            // a finding, reported: then the streams that do not arrive are replaced and the run goes on
            String h = s.host();
            System.out.printf("cordon %d: before the cordon (cordoned: %s), status.host %s: %s%n", i,
                cordoned.isEmpty() ? "none" : cordoned, h, e.getMessage());
            for (FailoverScenario.Renewed r : s.renewStuckStreams(Duration.ofSeconds(5))) {
              renewed++;
              leaked += r.seenWithAnotherSource();
              System.out.printf("cordon %d: the stream of %s replaced by a new flow (%d of its datagrams seen with "
                  + "another source)%n", i, r.pod(), r.seenWithAnotherSource());
            }
            steady = s.awaitSteady(Duration.ofSeconds(30));
          }
          String old = steady;
          if (!cordoned.isEmpty()) {
            OperatorMoves.cordon(s.cluster(), cordoned, false); // no move: the service stays where it is
          }
          long rcvBefore = ReceiverDrops.total(s.cluster());
          long t0 = System.nanoTime();
          OperatorMoves.cordon(s.cluster(), old, true);
          cordoned = old;
          await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(20))
              .until(() -> !s.host().isEmpty() && !s.host().equals(old));
          double moved = (System.nanoTime() - t0) / 1e9;
          String now = s.host();
          await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(50))
              .until(() -> !OperatorMoves.underWay(s.cluster(), FailoverScenario.SERVICE));
          s.awaitSteady(Duration.ofSeconds(30));
          long t1 = System.nanoTime();
          Pause.ms(300); // the last datagrams of the window in flight
          long steered = s.lostBetween(t0, t1, node -> !node.equals(now));
          long own = s.lostBetween(t0, t1, node -> node.equals(now));
          long leak = s.leakedSince(t0);
          long rcv = ReceiverDrops.total(s.cluster()) - rcvBefore;
          receiverDrops += rcv;
          lostSteered += steered;
          lostOwn += own;
          leaked += leak;
          slowest = Math.max(slowest, moved);
          System.out.printf(Locale.ROOT, "cordon %d: %s -> %s, status.host after %.2f s, lost %d steered + %d of the "
              + "new host's own pod, leaked %d; the external receivers' socket drops meanwhile %d%n", i, old, now, moved,
              steered, own, leak, rcv);
          done = i;
        }
      } catch (RuntimeException e) {
        stopped = Optional.of("run " + (done + 1) + ": " + e);
      } finally {
        if (!cordoned.isEmpty()) {
          OperatorMoves.cordon(s.cluster(), cordoned, false);
        }
      }
    } catch (RuntimeException e) {
      stopped = Optional.of("setup: " + e);
    }
    return new RowResult("cordon", String.format(Locale.ROOT, "%d runs, 2 ms streams: lost %d (%d steered, %d of the "
        + "new host's own pod), leaked %d; status.host after at most %.2f s; streams not via the host with the LB IP before a "
        + "cordon (replaced) %d; of the lost, at most %d dropped at the external receivers' full "
        + "sockets", done, lostSteered + lostOwn, lostSteered, lostOwn, leaked, slowest, renewed, receiverDrops), goal, done > 0 && lostSteered + lostOwn == 0 && leaked == 0 && renewed == 0, stopped);
  }
}
