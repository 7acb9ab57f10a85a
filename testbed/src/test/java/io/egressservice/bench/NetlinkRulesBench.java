package io.egressservice.bench;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.netlink.BatchResult;
import io.egressservice.netlink.RtNetlink;
import io.egressservice.netlink.Rule;
import io.egressservice.netlink.RuleChange;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * Benchmark, not a test (run by bench/netlink-rules.sh, never by mvn verify): time to install N
 * rules {@code from 10.x.y.z lookup 100 prio 5000 proto 201} (distinct sources) into a fresh network
 * namespace three ways: RtNetlink.apply (batched), {@code ip -batch FILE} (whole process), and one
 * {@code ip rule add} process per rule (1,000 only). Each measurement uses its own new namespace;
 * each is repeated and the median reported. Needs root.
 *
 * <p>Arguments: {@code [repetitions (default 3)] [sizes (default 1000,10000)]}.
 */
public final class NetlinkRulesBench {
  private NetlinkRulesBench() {}

  public static void main(String[] args) throws Exception {
    int reps = args.length > 0 ? Integer.parseInt(args[0]) : 3;
    int[] sizes = args.length > 1 ? Arrays.stream(args[1].split(",")).mapToInt(Integer::parseInt).toArray()
        : new int[] {1000, 10000};
    System.out.printf(Locale.ROOT, "kernel %s, %s, %d repetitions (median), fresh netns per measurement%n",
        System.getProperty("os.version"), run(List.of("ip", "-V")).trim(), reps);

    // Warm-up: loads JNA and lets the JIT see the encoder once, so the numbers are the steady state
    // of a long-running agent. Reported, not counted.
    double warm = timeOurs(500);
    System.out.printf(Locale.ROOT, "warm-up (RtNetlink, 500 rules, cold JVM): %.1f ms%n%n", warm);

    Map<String, Double> results = new LinkedHashMap<>();
    for (int n : sizes) {
      double ours = median(reps, () -> timeOurs(n));
      double noExcl = median(reps, () -> timeOurs(n, false));
      System.out.printf(Locale.ROOT, "%6d rules  RtNetlink.apply without NLM_F_EXCL  %9.1f ms  %9.0f rules/s%n", n,
          noExcl, n / noExcl * 1000);
      double batch = median(reps, () -> timeIpBatch(n));
      results.put(n + " netlink", ours);
      results.put(n + " ip-batch", batch);
      System.out.printf(Locale.ROOT, "%6d rules  RtNetlink.apply  %9.1f ms  %9.0f rules/s%n", n, ours, n / ours * 1000);
      System.out.printf(Locale.ROOT, "%6d rules  ip -batch        %9.1f ms  %9.0f rules/s   ratio netlink/ip-batch = %.2f%n",
          n, batch, n / batch * 1000, ours / batch);
      if (n <= 1000) {
        double perRule = median(1, () -> timeIpPerRule(n));
        System.out.printf(Locale.ROOT, "%6d rules  ip rule add x N  %9.1f ms  %9.0f rules/s   ratio netlink/per-process = %.3f%n",
            n, perRule, n / perRule * 1000, ours / perRule);
      }
      System.out.println();
    }
  }

  interface Measurement {
    double run() throws Exception;
  }

  private static double median(int reps, Measurement m) throws Exception {
    double[] t = new double[reps];
    for (int i = 0; i < reps; i++) {
      t[i] = m.run();
    }
    Arrays.sort(t);
    return t[reps / 2];
  }

  private static IpPrefix source(int i) {
    int v = i + 1;
    return IpPrefix.host(new byte[] {10, (byte) (v >> 16), (byte) (v >> 8), (byte) v});
  }

  private static String newNetns() {
    String name = "esa-bench-" + Integer.toHexString(ThreadLocalRandom.current().nextInt(1 << 24));
    run(List.of("ip", "netns", "add", name));
    return name;
  }

  private static void deleteNetns(String name) {
    run(List.of("ip", "netns", "del", name));
  }

  private static int countRules(String ns) {
    String out = run(List.of("ip", "-n", ns, "rule", "show"));
    return (int) out.lines().filter(l -> l.contains("proto 201")).count();
  }

  private static void check(String ns, int n, String what) {
    int count = countRules(ns);
    if (count != n) {
      throw new IllegalStateException(what + ": expected " + n + " rules, found " + count);
    }
  }

  private static double timeOurs(int n) {
    return timeOurs(n, true);
  }

  /** {@code exclusive} false: adds without NLM_F_EXCL (the kernel skips its duplicate scan). */
  static double timeOurs(int n, boolean exclusive) {
    String ns = newNetns();
    try (RtNetlink nl = RtNetlink.open(Optional.of(ns))) {
      List<RuleChange> changes = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        changes.add(RuleChange.add(Rule.lookup(IpFamily.V4, 5000, 100).from(source(i)).protocol(201)));
      }
      long t0 = System.nanoTime();
      BatchResult<RuleChange> r = nl.apply(changes, exclusive);
      double ms = (System.nanoTime() - t0) / 1e6;
      if (!r.allSucceeded()) {
        throw new IllegalStateException(r.failed().size() + " failed, first: " + r.failed().get(0).error().getMessage());
      }
      check(ns, n, "RtNetlink");
      return ms;
    } finally {
      deleteNetns(ns);
    }
  }

  private static double timeIpBatch(int n) throws IOException {
    String ns = newNetns();
    Path file = Files.createTempFile("esa-bench", ".ip");
    try {
      StringBuilder sb = new StringBuilder();
      for (int i = 0; i < n; i++) {
        sb.append("rule add from ").append(source(i)).append(" lookup 100 prio 5000 proto 201\n");
      }
      Files.writeString(file, sb);
      long t0 = System.nanoTime();
      run(List.of("ip", "-n", ns, "-batch", file.toString()));
      double ms = (System.nanoTime() - t0) / 1e6;
      check(ns, n, "ip -batch");
      return ms;
    } finally {
      Files.deleteIfExists(file);
      deleteNetns(ns);
    }
  }

  private static double timeIpPerRule(int n) {
    String ns = newNetns();
    try {
      long t0 = System.nanoTime();
      for (int i = 0; i < n; i++) {
        run(List.of("ip", "-n", ns, "rule", "add", "from", source(i).toString(), "lookup", "100", "prio", "5000",
            "proto", "201"));
      }
      double ms = (System.nanoTime() - t0) / 1e6;
      check(ns, n, "ip rule add per rule");
      return ms;
    } finally {
      deleteNetns(ns);
    }
  }

  private static String run(List<String> cmd) {
    try {
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
      if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
        throw new IllegalStateException(String.join(" ", cmd) + " failed: " + out);
      }
      return out;
    } catch (IOException e) {
      throw new IllegalStateException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
