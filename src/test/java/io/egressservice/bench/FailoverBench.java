package io.egressservice.bench;

import io.egressservice.cluster.FailoverScenario;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Failover in the namespace cluster ({@link FailoverScenario}): the host is powered off (its agent SIGKILLed, its
 * links down) while every node's pod sends a steady UDP stream (one datagram per 10 ms, one socket each); per run,
 * the time until the streams of the live nodes reach the external host through the new host with the LB IP, and
 * the datagrams seen outside with another source. The old host is powered on again (and must recover) before the
 * next run. Then a restart (SIGKILL, start) of the host's agent: moves and lost datagrams.
 *
 * <p>Usage: {@code bench/failover.sh [runs] [drop|pass]}.
 */
public final class FailoverBench {
  /** Held, so the level sticks: the mock server logs every request on stdout. */
  private static final java.util.logging.Logger MOCK_LOG = java.util.logging.Logger.getLogger("io.fabric8");

  private FailoverBench() {}

  public static void main(String[] args) {
    MOCK_LOG.setLevel(java.util.logging.Level.WARNING);
    int runs = args.length > 0 ? Integer.parseInt(args[0]) : 5;
    String noHost = args.length > 1 ? args[1] : "drop";
    System.out.printf("failover bench: %d power-offs, --no-host=%s, %d cores%n", runs, noHost,
        Runtime.getRuntime().availableProcessors());
    List<Double> all = new ArrayList<>();
    List<Double> allocatorSide = new ArrayList<>();
    long leaked = 0;
    try (FailoverScenario s = new FailoverScenario(noHost)) {
      for (int i = 1; i <= runs; i++) {
        s.awaitSteady(Duration.ofSeconds(60));
        FailoverScenario.Outcome o = s.powerOffHost(Duration.ofSeconds(30));
        all.addAll(o.recoverySeconds());
        leaked += o.leaked();
        List<Double> fs = s.allocator().allocator().failoverSeconds();
        double alloc = fs.isEmpty() ? Double.NaN : fs.get(fs.size() - 1);
        allocatorSide.add(alloc);
        System.out.printf(Locale.ROOT, "run %d: %s -> %s, streams back after %s s (allocator: last answer -> status "
            + "written %.3f s), leaked %d%s%n", i, o.oldHost(), o.newHost(), fmt(o.recoverySeconds()), alloc,
            o.leaked(), o.leakedSamples().isEmpty() ? "" : " " + o.leakedSamples());
        s.powerOn(o.oldHost());
      }
      System.out.printf(Locale.ROOT, "power-off -> streams via the new host with the LB IP: median %.2f s, max %.2f s "
          + "over %d streams in %d runs; leaked datagrams (source not the LB IP): %d%n", median(all),
          all.stream().mapToDouble(Double::doubleValue).max().orElse(Double.NaN), all.size(), runs, leaked);
      System.out.printf(Locale.ROOT, "allocator side (host's last probe answer, up to one 500 ms interval before it went away, "
          + "-> new status.host written): median %.3f s%n",
          median(allocatorSide));

      String host = s.awaitSteady(Duration.ofSeconds(60));
      long t0 = System.nanoTime();
      s.cluster().node(host).agent().kill();
      s.cluster().node(host).agent().start();
      s.cluster().node(host).agent().awaitReady();
      long t1 = System.nanoTime();
      System.out.printf(Locale.ROOT, "agent restart on host %s (SIGKILL, back in %.1f s): status.host %s, "
          + "datagrams lost %d%n", host, (t1 - t0) / 1e9, s.host().equals(host) ? "unchanged" : "MOVED to " + s.host(),
          s.lostBetween(t0, t1));
    }
  }

  private static String fmt(List<Double> xs) {
    return xs.stream().map(x -> String.format(Locale.ROOT, "%.2f", x)).toList().toString();
  }

  private static double median(List<Double> xs) {
    List<Double> sorted = xs.stream().filter(x -> !x.isNaN()).sorted().toList();
    if (sorted.isEmpty()) {
      return Double.NaN;
    }
    int n = sorted.size();
    return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
  }
}
