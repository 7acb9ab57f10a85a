package io.egressservice.bench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Failover in the namespace cluster with the real agent processes, one row per fault (each on a fresh cluster, one
 * class each): {@code poweroff} (and the agent {@code restart} after it), {@code leader} (the leading allocator dies
 * with the host), {@code cordon} (planned move, 2 ms streams), {@code loss} (50 % loss on the allocator's path to
 * every node) and {@code stall} (SIGSTOP of the host's agent). A row that fails reports what it measured until then
 * and the next row runs; every row closes its cluster (namespaces, nft rules, processes) on every exit path, and on
 * JVM shutdown the clusters' own hooks do.
 *
 * <p>Usage: {@code bench/failover.sh [runs] [drop|pass] [row[=count]...]}: {@code runs} (default 5) is the number
 * of power-offs; rows default to all, in the order above, with counts poweroff=runs, leader=3, cordon=10, loss=1
 * (windows of 60 s), stall=3.
 */
public final class FailoverBench {
  /** Held, so the level sticks: the mock server logs every request on stdout. */
  private static final java.util.logging.Logger MOCK_LOG = java.util.logging.Logger.getLogger("io.fabric8");
  private static final List<String> ROWS = List.of("poweroff", "leader", "cordon", "loss", "stall");
  private static final Duration LOSS_WINDOW = Duration.ofSeconds(60);

  private FailoverBench() {}

  public static void main(String[] args) {
    MOCK_LOG.setLevel(java.util.logging.Level.WARNING);
    int runs = 5;
    String noHost = "drop";
    Map<String, Integer> counts = new LinkedHashMap<>(Map.of("leader", 3, "cordon", 10, "loss", 1, "stall", 3));
    List<String> chosen = new ArrayList<>();
    for (String a : args) {
      if (a.matches("\\d+")) {
        runs = Integer.parseInt(a);
      } else if (a.equals("drop") || a.equals("pass")) {
        noHost = a;
      } else {
        String[] kv = a.split("=", 2);
        if (!ROWS.contains(kv[0]) || (kv.length == 2 && !kv[1].matches("\\d+"))) {
          System.err.println("unknown argument " + a + "; usage: [runs] [drop|pass] [row[=count]...], rows " + ROWS);
          System.exit(2);
        }
        chosen.add(kv[0]);
        if (kv.length == 2) {
          counts.put(kv[0], Integer.parseInt(kv[1]));
        }
      }
    }
    counts.putIfAbsent("poweroff", runs);
    List<String> rows = ROWS.stream().filter(r -> chosen.isEmpty() || chosen.contains(r)).toList();
    System.out.printf(Locale.ROOT, "failover bench: rows %s, counts %s, --no-host=%s, %d cores, load %s%n", rows,
        rows.stream().map(r -> r + "=" + counts.get(r)).toList(), noHost, Runtime.getRuntime().availableProcessors(),
        Load.average());
    String nh = noHost;
    Map<String, Supplier<List<RowResult>>> bench = Map.of(
        "poweroff", () -> PowerOffRow.run(nh, counts.get("poweroff")),
        "leader", () -> List.of(LeaderDeathRow.run(nh, counts.get("leader"))),
        "cordon", () -> List.of(CordonRow.run(nh, counts.get("cordon"))),
        "loss", () -> List.of(ProbeLossRow.run(nh, counts.get("loss"), LOSS_WINDOW)),
        "stall", () -> List.of(StallRow.run(nh, counts.get("stall"))));
    List<RowResult> results = new ArrayList<>();
    for (String r : rows) {
      long t0 = System.nanoTime();
      try {
        results.addAll(bench.get(r).get());
      } catch (RuntimeException e) {
        results.add(RowResult.failed(r, "see above", e));
      }
      System.out.printf(Locale.ROOT, "row %s took %.0f s, load %s%n", r, (System.nanoTime() - t0) / 1e9,
          Load.average());
    }
    System.out.println("---- summary (load " + Load.average() + ")");
    results.forEach(x -> System.out.println(x.line()));
  }
}
