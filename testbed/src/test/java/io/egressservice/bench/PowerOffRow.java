package io.egressservice.bench;

import io.egressservice.cluster.FailoverScenario;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * The host powered off (agent SIGKILLed, links down), the allocator running apart from the agents: per run, the time
 * until the streams of the live nodes reach the external host through the new host with the LB IP, and datagrams
 * seen outside with another source; the old host is powered on again before the next run. Then a restart (SIGKILL,
 * start) of the host's agent: moves and lost datagrams.
 */
final class PowerOffRow {
  private static final String ROW = "power-off";

  private PowerOffRow() {}

  static List<RowResult> run(String noHost, int runs) {
    String goal = "median <= 3 s, 0 leaked";
    List<Double> all = new ArrayList<>();
    List<Double> allocatorSide = new ArrayList<>();
    long leaked = 0;
    int done = 0;
    int flowsBack = 0;
    Optional<String> stopped = Optional.empty();
    RowResult restart;
    try (FailoverScenario s = new FailoverScenario(noHost)) {
      try {
        for (int i = 1; i <= runs; i++) {
          s.awaitSteady(Duration.ofSeconds(60));
          FailoverScenario.Outcome o = s.powerOffHost(Duration.ofSeconds(30));
          all.addAll(o.recoverySeconds());
          leaked += o.leaked();
          List<Double> fs = s.allocator().allocator().failoverSeconds();
          double alloc = fs.isEmpty() ? Double.NaN : fs.get(fs.size() - 1);
          allocatorSide.add(alloc);
          System.out.printf(Locale.ROOT, "power-off %d: %s -> %s, status.host after %.2f s, streams back after %s s "
              + "(allocator: last answer -> status written %.3f s), leaked %d%s%n", i, o.oldHost(), o.newHost(),
              o.hostSeconds(), Stats.seconds(o.recoverySeconds()), alloc, o.leaked(),
              o.leakedSamples().isEmpty() ? "" : " " + o.leakedSamples());
          if (PowerOn.againAndFlowBack(s, ROW, i, o.oldHost())) {
            flowsBack++;
          }
          done = i;
        }
      } catch (RuntimeException e) {
        stopped = Optional.of("run " + (done + 1) + ": " + e);
      }
      System.out.printf(Locale.ROOT, "allocator side (host's last probe answer, up to one 500 ms interval before it "
          + "went away, -> new status.host written): median %.3f s%n", Stats.median(allocatorSide));
      restart = restart(s);
    }
    double median = Stats.median(all);
    RowResult powerOff = new RowResult("poweroff", String.format(Locale.ROOT, "%d runs (--no-host=%s): streams via "
        + "the new host with the LB IP after median %.2f s, max %.2f s (%d streams); leaked %d; powered on again, the old "
        + "host's own pod's flow came back in %d of %d", done, noHost, median, Stats.max(all), all.size(), leaked,
        flowsBack, done), goal, done > 0 && median <= 3.0 && leaked == 0, stopped);
    return List.of(powerOff, restart);
  }

  private static RowResult restart(FailoverScenario s) {
    String goal = "status.host unchanged, 0 lost";
    try {
      String host = s.awaitSteady(Duration.ofSeconds(60));
      long t0 = System.nanoTime();
      s.cluster().node(host).agent().kill();
      s.cluster().node(host).agent().start();
      s.cluster().node(host).agent().awaitReady();
      long t1 = System.nanoTime();
      Pause.ms(500);
      String now = s.host();
      long lost = s.lostBetween(t0, t1);
      return new RowResult("restart", String.format(Locale.ROOT, "agent of host %s SIGKILLed, back in %.1f s: "
          + "status.host %s, lost %d", host, (t1 - t0) / 1e9, now.equals(host) ? "unchanged" : "MOVED to " + now,
          lost), goal, now.equals(host) && lost == 0, Optional.empty());
    } catch (RuntimeException e) {
      return RowResult.failed("restart", goal, e);
    }
  }
}
