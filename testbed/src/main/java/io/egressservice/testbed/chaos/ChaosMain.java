package io.egressservice.testbed.chaos;

import io.egressservice.logging.MockServerLogs;
import java.time.Duration;
import java.util.List;

/**
 * {@code bench/chaos.sh [--seed N] [--minutes M] [--mode source|mark] [--services S] [--faults K,K]}: one soak, its figures table on
 * stdout; exit 0 when no invariant broke, 1 when one did, 2 on bad arguments.
 */
public final class ChaosMain {
  private ChaosMain() {}

  public static void main(String[] args) {
    long seed = System.nanoTime() & 0xffffffffL;
    double minutes = 10;
    String mode = "source";
    int services = -1;
    List<Fault> faults = List.of(Fault.values());
    try {
      for (int i = 0; i < args.length; i++) {
        switch (args[i]) {
          case "--seed" -> seed = Long.parseLong(args[++i]);
          case "--minutes" -> minutes = Double.parseDouble(args[++i]);
          case "--mode" -> mode = args[++i];
          case "--services" -> services = Integer.parseInt(args[++i]);
          case "--faults" -> faults = java.util.Arrays.stream(args[++i].split(",")).map(String::trim)
              .map(Fault::valueOf).toList();
          default -> throw new IllegalArgumentException("unknown argument " + args[i]);
        }
      }
    } catch (RuntimeException e) {
      System.err.println(e.getMessage() + "\nusage: chaos.sh [--seed N] [--minutes M] [--mode source|mark]"
          + " [--services 20-50] [--faults KIND,KIND (default: every kind of " + List.of(Fault.values()) + ")]");
      System.exit(2);
      return;
    }
    // the mock API server logs every request; the run's story is the faults and the table
    MockServerLogs.warningsOnly();
    if (services < 0) {
      services = 20 + new java.util.Random(seed).nextInt(31); // 20-50, from the seed
    }
    Duration duration = Duration.ofMillis((long) (minutes * 60_000));
    // about 50,000 stream datagrams in all, under the servers' record of 100,000
    long perStreamMillis = Math.max(20, duration.toMillis() * 9 / 50_000);
    Soak.Figures f = Soak.run(new Soak.Settings(seed, duration, mode, services, faults, false,
        Duration.ofMillis(perStreamMillis), java.nio.file.Path.of("bench", "results"), line -> System.out.println(line)));
    System.out.print(f.table());
    System.exit(f.violations().isEmpty() ? 0 : 1);
  }
}
