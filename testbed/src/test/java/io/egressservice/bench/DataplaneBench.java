package io.egressservice.bench;

import io.egressservice.kernel.linux.LinuxKernel;
import io.egressservice.kernel.linux.NftClient;
import io.egressservice.dataplane.ApplyReport;
import io.egressservice.dataplane.Dataplane;
import io.egressservice.dataplane.Differ;
import io.egressservice.dataplane.ObservedState;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.kernel.GenerationSource;
import io.egressservice.plan.DesiredState;
import io.egressservice.model.ObjectRef;
import io.egressservice.plan.RuleSpec;
import io.egressservice.plan.SnatEntry;
import io.egressservice.plan.TableRef;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import io.egressservice.netlink.NetnsThread;
import io.egressservice.netlink.Rule;
import io.egressservice.netlink.RuleChange;
import io.egressservice.nft.EgressNftables;
import io.egressservice.nft.EgressNftables.NftChange;
import io.egressservice.nft.EgressNftables.SnatElement;
import java.util.HashSet;
import java.util.Set;

/**
 * Benchmark, not a test (run by bench/dataplane.sh, never by mvn verify): {@link Dataplane#reconcile}
 * for one LoadBalancerIP EgressService on table 100 with N endpoints (N rules {@code from EP lookup
 * 100} at P, two in-cluster rules at P-1, N SNAT elements), in fresh network namespaces:
 *
 * <ul>
 *   <li>cold: empty namespace to the plan;
 *   <li>no-change: the same plan again, right after the cold apply, with the generation cache and
 *       without it (a Dataplane whose generation source always fails: it lists every time, as before);
 *   <li>1%: 1% of the endpoints replaced by new addresses.
 * </ul>
 *
 * Kernel time is {@link ApplyReport#kernelNanos()} (observe + netlink + libnftables calls), wall
 * time is the whole reconcile (diff included). Each value is the median of the repetitions, each
 * repetition in its own namespace. Then a breakdown of a no-change reconcile at the largest N, and
 * {@code ip -batch} / {@code nft -f} for the same cold content. Needs root.
 *
 * <p>Arguments: {@code [repetitions (default 3)] [sizes (default 1000,10000)]}.
 */
public final class DataplaneBench {
  static final int PRIORITY = 5000;
  static final int PROTOCOL = 201;
  static final ObjectRef SERVICE = new ObjectRef("default", "web");
  static final IpPrefix LB = IpPrefix.parse("192.0.2.10");
  static final List<IpPrefix> IN_CLUSTER = List.of(IpPrefix.parse("10.96.0.0/12"), IpPrefix.parse("10.244.0.0/16"));

  private DataplaneBench() {}

  /** One measured series: values in ms. */
  record Row(double coldKernel, double coldWall, double sameKernel, double sameWall, double steadyKernel,
      double steadyWall, double sameNoCacheKernel,
      double sameNoCacheWall, double changeKernel, double changeWall, int changes) {}

  public static void main(String[] args) throws Exception {
    int reps = args.length > 0 ? Integer.parseInt(args[0]) : 3;
    int[] sizes = args.length > 1 ? Arrays.stream(args[1].split(",")).mapToInt(Integer::parseInt).toArray()
        : new int[] {1000, 10000};
    System.out.printf(Locale.ROOT, "kernel %s, %s, %s; %d repetitions (median), fresh netns each%n",
        System.getProperty("os.version"), run(List.of("ip", "-V")).trim(), run(List.of("nft", "-v")).trim(), reps);
    if (args.length > 2 && args[2].equals("fast-path")) {
      fastPath(1000, 0); // warm-up, not reported
      System.out.println();
      System.out.println("| endpoints (10 per service) | step | kernel ms | wall ms | dumps | nft listings |");
      System.out.println("|---|---|---:|---:|---:|---:|");
      for (int n : sizes) {
        fastPath(n, reps);
      }
      return;
    }
    measure(1000); // warm-up: JNA, libnftables, JIT; not reported
    System.out.println();
    System.out.println("| N | step | kernel ms | wall ms | target |");
    System.out.println("|---|---|---:|---:|---|");
    for (int n : sizes) {
      List<Row> rows = new ArrayList<>();
      for (int i = 0; i < reps; i++) {
        rows.add(measure(n));
      }
      int changes = rows.get(0).changes();
      line(n, "cold apply", med(rows, Row::coldKernel), med(rows, Row::coldWall), n == 1000 ? "kernel <= 50 ms" : "");
      line(n, "no-change re-apply", med(rows, Row::sameKernel), med(rows, Row::sameWall),
          n == 10000 ? "kernel <= 20 ms" : "");
      line(n, "no-change again (median of 5 more)", med(rows, Row::steadyKernel), med(rows, Row::steadyWall),
          n == 10000 ? "kernel <= 20 ms" : "");
      line(n, "no-change, nft cache off", med(rows, Row::sameNoCacheKernel), med(rows, Row::sameNoCacheWall),
          "(before this change)");
      line(n, "1% change (" + changes + " endpoints: " + 2 * changes + " rules, " + 2 * changes + " elements)",
          med(rows, Row::changeKernel), med(rows, Row::changeWall), "proportional to the change");
    }
    int big = Arrays.stream(sizes).max().orElse(10000);
    System.out.println();
    breakdown(big, reps);
    System.out.println();
    cli(big, reps);
  }

  static void line(int n, String step, double kernel, double wall, String target) {
    System.out.printf(Locale.ROOT, "| %,d | %s | %.1f | %.1f | %s |%n", n, step, kernel, wall, target);
  }

  static double med(List<Row> rows, java.util.function.ToDoubleFunction<Row> f) {
    double[] v = rows.stream().mapToDouble(f).sorted().toArray();
    return v[v.length / 2];
  }

  static IpPrefix endpoint(int i, int second) {
    return IpPrefix.host(new byte[] {10, (byte) second, (byte) (i >> 8), (byte) i});
  }

  static List<IpPrefix> endpoints(int n) {
    List<IpPrefix> out = new ArrayList<>(n);
    for (int i = 1; i <= n; i++) {
      out.add(endpoint(i, 244));
    }
    return out;
  }

  /** What the Planner produces for one LoadBalancerIP EgressService on table 100 with these endpoints. */
  static DesiredState desired(List<IpPrefix> eps) {
    List<RuleSpec> rules = new ArrayList<>();
    List<SnatEntry> snat = new ArrayList<>();
    for (IpPrefix ep : eps) {
      rules.add(new RuleSpec(IpFamily.V4, PRIORITY, Optional.of(ep), Optional.empty(), TableRef.of(100), Optional.of(SERVICE)));
      snat.add(new SnatEntry(ep, LB, SERVICE));
    }
    for (IpPrefix p : IN_CLUSTER) {
      rules.add(new RuleSpec(IpFamily.V4, PRIORITY - 1, Optional.empty(), Optional.of(p), TableRef.main(), Optional.empty()));
    }
    rules.sort(RuleSpec.ORDER);
    snat.sort(SnatEntry.ORDER);
    return DesiredState.builder().node("node-a").priority(PRIORITY).ruleProtocol(PROTOCOL).rules(rules).snat(snat)
        .inCluster(IN_CLUSTER).build();
  }

  /** {@code services} LoadBalancerIP services of 10 endpoints each, on tables 100 and 101 in turn. */
  static List<List<IpPrefix>> spread(int endpoints) {
    List<List<IpPrefix>> out = new ArrayList<>();
    List<IpPrefix> all = endpoints(endpoints);
    for (int i = 0; i < all.size(); i += 10) {
      out.add(new ArrayList<>(all.subList(i, Math.min(all.size(), i + 10))));
    }
    return out;
  }

  static ObjectRef service(int i) {
    return new ObjectRef("bench", "svc" + i);
  }

  static DesiredState desiredServices(List<List<IpPrefix>> services) {
    List<RuleSpec> rules = new ArrayList<>();
    List<SnatEntry> snat = new ArrayList<>();
    List<io.egressservice.plan.RouteSpec> routes = new ArrayList<>();
    for (int i = 0; i < services.size(); i++) {
      IpPrefix lb = IpPrefix.host(new byte[] {(byte) 192, 0, (byte) (2 + (i >> 8)), (byte) i});
      for (IpPrefix ep : services.get(i)) {
        rules.add(new RuleSpec(IpFamily.V4, PRIORITY, Optional.of(ep), Optional.empty(), TableRef.of(100 + i % 2),
            Optional.of(service(i))));
        snat.add(new SnatEntry(ep, lb, service(i)));
      }
    }
    for (long t : new long[] {100, 101}) {
      for (IpPrefix p : IN_CLUSTER) {
        routes.add(new io.egressservice.plan.RouteSpec(IpFamily.V4, TableRef.of(t), p));
      }
    }
    rules.sort(RuleSpec.ORDER);
    snat.sort(SnatEntry.ORDER);
    return DesiredState.builder().node("node-a").priority(PRIORITY).ruleProtocol(PROTOCOL).rules(rules).snat(snat)
        .inCluster(IN_CLUSTER).ruleMode(io.egressservice.model.RuleMode.SOURCE)
        .markMask(io.egressservice.model.PlanConfig.DEFAULT_MARK_MASK)
        .networkMarks(java.util.Map.of()).routes(routes).build();
  }

  /**
   * The fast path against the full reconcile for one endpoint replaced (its rule and SNAT element), at {@code n}
   * endpoints in services of 10: median of {@code 2 * reps + 1} changes each, in one namespace after a cold apply.
   */
  static void fastPath(int n, int reps) {
    String ns = newNetns();
    try (Dataplane dp = Dataplane.open(LinuxKernel.open(Optional.of(ns)), PRIORITY, PROTOCOL)) {
      List<List<IpPrefix>> services = spread(n);
      DesiredState current = desiredServices(services);
      long t0 = System.nanoTime();
      ApplyReport cold = dp.reconcile(current);
      long coldWall = System.nanoTime() - t0;
      check(cold, cold.applied().size(), "cold");
      if (reps > 0) {
        System.out.printf(Locale.ROOT, "| %,d | cold apply (%,d services; rule adds without NLM_F_EXCL) | %.1f | %.1f | | |%n",
            n, services.size(), ms(cold.kernelNanos()), ms(coldWall));
      }
      int r = 2 * Math.max(reps, 1) + 1;
      double[][] fast = new double[2][r];
      double[][] full = new double[2][r];
      long dumps = 0;
      long listings = 0;
      for (int i = 0; i < 2 * r; i++) {
        int which = (i * 7919) % services.size();
        List<IpPrefix> eps = services.get(which);
        eps.set(0, endpoint(i + 1, 246)); // a new address for its first endpoint
        DesiredState next = desiredServices(services);
        boolean viaFast = i % 2 == 0;
        long d0 = ((LinuxKernel) dp.kernel()).netlink().dumpRequests();
        long l0 = dp.nftObserveStats().listings();
        t0 = System.nanoTime();
        ApplyReport report = viaFast ? dp.reconcileChanged(current, next, Set.of(service(which)))
            : dp.reconcile(next);
        long wall = System.nanoTime() - t0;
        check(report, 4, viaFast ? "fast path" : "full reconcile");
        double[][] into = viaFast ? fast : full;
        into[0][i / 2] = ms(report.kernelNanos());
        into[1][i / 2] = ms(wall);
        if (viaFast) {
          dumps += ((LinuxKernel) dp.kernel()).netlink().dumpRequests() - d0;
          listings += dp.nftObserveStats().listings() - l0;
        }
        current = next;
      }
      if (dp.fastPathStats().fallbacks() != 0) {
        throw new IllegalStateException("the fast path fell back " + dp.fastPathStats().fallbacks() + " times");
      }
      for (double[] a : fast) {
        Arrays.sort(a);
      }
      for (double[] a : full) {
        Arrays.sort(a);
      }
      if (reps > 0) {
        System.out.printf(Locale.ROOT, "| %,d | one endpoint changed: reconcileChanged | %.2f | %.2f | %d | %d |%n", n,
            fast[0][r / 2], fast[1][r / 2], dumps, listings);
        System.out.printf(Locale.ROOT, "| %,d | one endpoint changed: full reconcile | %.2f | %.2f | | |%n", n,
            full[0][r / 2], full[1][r / 2]);
      }
    } finally {
      deleteNetns(ns);
    }
  }

  static double ms(long nanos) {
    return nanos / 1e6;
  }

  static Row measure(int n) {
    String ns = newNetns();
    Function<NetnsThread, GenerationSource> off = t -> GenerationSource.unavailable("benchmark: cache off");
    try (Dataplane dp = Dataplane.open(LinuxKernel.open(Optional.of(ns)), PRIORITY, PROTOCOL);
        Dataplane noCache = Dataplane.open(LinuxKernel.open(Optional.of(ns), off), PRIORITY, PROTOCOL)) {
      List<IpPrefix> eps = endpoints(n);
      DesiredState plan = desired(eps);

      long t0 = System.nanoTime();
      ApplyReport cold = dp.reconcile(plan);
      long coldWall = System.nanoTime() - t0;
      check(cold, 2 * n + 4, "cold"); // n + 2 rules, n elements, the base, the in-cluster sets

      t0 = System.nanoTime();
      ApplyReport same = dp.reconcile(plan);
      long sameWall = System.nanoTime() - t0;
      check(same, 0, "no-change");

      double[] steadyK = new double[5];
      double[] steadyW = new double[5];
      for (int i = 0; i < 5; i++) {
        t0 = System.nanoTime();
        ApplyReport again = dp.reconcile(plan);
        steadyW[i] = ms(System.nanoTime() - t0);
        steadyK[i] = ms(again.kernelNanos());
        check(again, 0, "no-change again");
      }
      Arrays.sort(steadyK);
      Arrays.sort(steadyW);

      t0 = System.nanoTime();
      ApplyReport sameNoCache = noCache.reconcile(plan);
      long sameNoCacheWall = System.nanoTime() - t0;
      check(sameNoCache, 0, "no-change without cache");

      int k = Math.max(1, n / 100);
      List<IpPrefix> changed = new ArrayList<>(eps);
      for (int i = 0; i < k; i++) {
        int at = i * (n / k);
        changed.set(at, endpoint(at + 1, 245));
      }
      DesiredState plan2 = desired(changed);
      t0 = System.nanoTime();
      ApplyReport change = dp.reconcile(plan2);
      long changeWall = System.nanoTime() - t0;
      check(change, 4 * k, "1% change");
      check(dp.reconcile(plan2), 0, "after the change");
      return new Row(ms(cold.kernelNanos()), ms(coldWall), ms(same.kernelNanos()), ms(sameWall),
          steadyK[2], steadyW[2],
          ms(sameNoCache.kernelNanos()), ms(sameNoCacheWall), ms(change.kernelNanos()), ms(changeWall), k);
    } finally {
      deleteNetns(ns);
    }
  }

  static void check(ApplyReport r, int applied, String what) {
    if (!r.succeeded() || r.applied().size() != applied) {
      throw new IllegalStateException(what + ": expected " + applied + " applied changes and no failure, got "
          + r.applied().size() + " applied, failures " + r.failures());
    }
  }

  interface Step {
    void run();
  }

  static double medianMs(int reps, Step s) {
    double[] t = new double[reps];
    for (int i = 0; i < reps; i++) {
      long t0 = System.nanoTime();
      s.run();
      t[i] = ms(System.nanoTime() - t0);
    }
    Arrays.sort(t);
    return t[reps / 2];
  }

  /** Where a no-change reconcile of N endpoints spends its time (median of 2*reps+1 runs each). */
  static void breakdown(int n, int reps) {
    String ns = newNetns();
    int r = 2 * reps + 1;
    try (Dataplane dp = Dataplane.open(LinuxKernel.open(Optional.of(ns)), PRIORITY, PROTOCOL);
        Dataplane noCache = Dataplane.open(LinuxKernel.open(Optional.of(ns),
            t -> GenerationSource.unavailable("benchmark: cache off")), PRIORITY, PROTOCOL)) {
      DesiredState plan = desired(endpoints(n));
      dp.reconcile(plan);
      ObservedState obs = dp.observe();
      System.out.printf(Locale.ROOT, "No-change reconcile of %,d endpoints (%,d owned rules), median of %d, ms:%n",
          n, obs.rules().size(), r);
      System.out.printf(Locale.ROOT, "  ip rule dump, both families (RtNetlink.listRules x2)   %7.2f%n",
          medianMs(r, () -> {
            ((LinuxKernel) dp.kernel()).netlink().listRules(IpFamily.V4);
            ((LinuxKernel) dp.kernel()).netlink().listRules(IpFamily.V6);
          }));
      System.out.printf(Locale.ROOT, "  Dataplane.observe (dumps + filter + nft, cached)         %7.2f%n",
          medianMs(r, dp::observe));
      System.out.printf(Locale.ROOT, "  Dataplane.observe, nft cache off (lists the table)      %7.2f%n",
          medianMs(r, noCache::observe));
      System.out.printf(Locale.ROOT, "  Differ.diff                                             %7.2f%n",
          medianMs(r, () -> Differ.diff(plan, obs)));
      System.out.printf(Locale.ROOT, "  Dataplane.reconcile (all of it)                         %7.2f%n",
          medianMs(r, () -> dp.reconcile(plan)));
      System.out.printf(Locale.ROOT, "  'ip -n NS rule show' process, for scale                 %7.2f%n",
          medianMs(r, () -> run(List.of("ip", "-n", ns, "rule", "show"))));
      System.out.printf(Locale.ROOT, "  'nft -j list table' process, for scale                  %7.2f%n",
          medianMs(r, () -> run(List.of("ip", "netns", "exec", ns, "nft", "-j", "list", "table", "inet",
              "egress_service_agent"))));
      System.out.println("  nft listing cache: " + dp.nftObserveStats());

      // The parts of a 1% change (n/100 endpoints replaced), each timed on its own.
      int k = Math.max(1, n / 100);
      List<RuleChange> adds = new ArrayList<>();
      List<RuleChange> deletes = new ArrayList<>();
      Set<SnatElement> addSnat = new HashSet<>();
      Set<SnatElement> deleteSnat = new HashSet<>();
      List<IpPrefix> eps = endpoints(n);
      for (int i = 0; i < k; i++) {
        int at = i * (n / k);
        IpPrefix old = eps.get(at);
        IpPrefix neu = endpoint(at + 1, 245);
        adds.add(RuleChange.add(Rule.lookup(IpFamily.V4, PRIORITY, 100).from(neu).protocol(PROTOCOL)));
        deletes.add(RuleChange.delete(Rule.lookup(IpFamily.V4, PRIORITY, 100).from(old).protocol(PROTOCOL)));
        addSnat.add(new SnatElement(neu, LB, SERVICE.toString()));
        deleteSnat.add(new SnatElement(old, LB, SERVICE.toString()));
      }
      System.out.printf(Locale.ROOT, "The parts of a 1%% change (%d endpoints) at N=%,d, ms (one run each):%n", k, n);
      System.out.printf(Locale.ROOT, "  RtNetlink.apply, %d rule adds                          %7.2f%n", k,
          medianMs(1, () -> ((LinuxKernel) dp.kernel()).netlink().apply(adds)));
      try (EgressNftables nft = EgressNftables.open(NftClient.open(((LinuxKernel) dp.kernel()).thread()), LinuxKernel.generation(((LinuxKernel) dp.kernel()).thread()))) {
        nft.observe();
        System.out.printf(Locale.ROOT, "  EgressNftables.apply, %d deletes + %d adds (cached)    %7.2f%n", k, k,
            medianMs(1, () -> nft.apply(new NftChange(addSnat, deleteSnat, Optional.empty()), true)));
      }
      System.out.printf(Locale.ROOT, "  RtNetlink.apply, %d rule deletes                       %7.2f%n", k,
          medianMs(1, () -> ((LinuxKernel) dp.kernel()).netlink().apply(deletes)));
    } finally {
      deleteNetns(ns);
    }
  }

  /** The same cold content through the CLIs: ip -batch for the rules, nft -f for table and elements. */
  static void cli(int n, int reps) throws IOException {
    Path rules = Files.createTempFile("esa-bench", ".ip");
    Path nft = Files.createTempFile("esa-bench", ".nft");
    try {
      StringBuilder ip = new StringBuilder();
      StringBuilder el = new StringBuilder();
      for (IpPrefix p : IN_CLUSTER) {
        ip.append("rule add to ").append(p.cidrText()).append(" lookup main prio ").append(PRIORITY - 1)
            .append(" proto ").append(PROTOCOL).append('\n');
      }
      for (IpPrefix ep : endpoints(n)) {
        ip.append("rule add from ").append(ep).append(" lookup 100 prio ").append(PRIORITY).append(" proto ")
            .append(PROTOCOL).append('\n');
        el.append(el.length() == 0 ? "" : ",\n").append(ep).append(" comment \"default/web\" : ").append(LB.addressText());
      }
      Files.writeString(rules, ip);
      Files.writeString(nft, """
          table inet egress_service_agent {
            map snat_v4 { type ipv4_addr : ipv4_addr; elements = { %s } }
            map snat_v6 { type ipv6_addr : ipv6_addr; }
            set in_cluster_v4 { type ipv4_addr; flags interval; elements = { 10.96.0.0/12, 10.244.0.0/16 } }
            set in_cluster_v6 { type ipv6_addr; flags interval; }
            chain postrouting {
              type nat hook postrouting priority srcnat - 10; policy accept;
              ip daddr @in_cluster_v4 return
              ip6 daddr @in_cluster_v6 return
              snat ip to ip saddr map @snat_v4
              snat ip6 to ip6 saddr map @snat_v6
            }
          }
          """.formatted(el), StandardCharsets.UTF_8);
      double[] ipMs = new double[reps];
      double[] nftMs = new double[reps];
      for (int i = 0; i < reps; i++) {
        String ns = newNetns();
        try {
          long t0 = System.nanoTime();
          run(List.of("ip", "-n", ns, "-batch", rules.toString()));
          ipMs[i] = ms(System.nanoTime() - t0);
          t0 = System.nanoTime();
          run(List.of("ip", "netns", "exec", ns, "nft", "-f", nft.toString()));
          nftMs[i] = ms(System.nanoTime() - t0);
        } finally {
          deleteNetns(ns);
        }
      }
      Arrays.sort(ipMs);
      Arrays.sort(nftMs);
      System.out.printf(Locale.ROOT, "Same cold content via the CLIs, N=%,d (whole processes, median of %d):%n", n, reps);
      System.out.printf(Locale.ROOT, "  ip -batch (%,d rule adds)          %8.1f ms%n", n + 2, ipMs[reps / 2]);
      System.out.printf(Locale.ROOT, "  nft -f (table + %,d elements)      %8.1f ms%n", n, nftMs[reps / 2]);
    } finally {
      Files.deleteIfExists(rules);
      Files.deleteIfExists(nft);
    }
  }

  static String newNetns() {
    String name = "esa-bench-" + Integer.toHexString(ThreadLocalRandom.current().nextInt(1 << 24));
    run(List.of("ip", "netns", "add", name));
    return name;
  }

  static void deleteNetns(String name) {
    run(List.of("ip", "netns", "del", name));
  }

  static String run(List<String> cmd) {
    try {
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
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
