package io.egressservice.bench;

import io.egressservice.netlink.NetnsThread;
import java.io.File;
import java.io.IOException;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * Benchmark, not a test (run by bench/packets.sh, never by mvn verify): per-packet round-trip
 * latency of traffic that did NOT opt in, forwarded by a "node" namespace that holds the agent's
 * state for N opted-in sources, in source mode (N {@code ip rule from EP lookup 100}) and in mark
 * mode (an nftables verdict map with N elements plus one {@code fwmark} rule per network).
 *
 * <p>Topology, rebuilt for every configuration: {@code pkb-client} (10.200.0.2/24) -- veth --
 * {@code pkb-node} (10.200.0.1, 10.201.0.1, forwarding on, main table) -- veth -- {@code
 * pkb-server} (10.201.0.2/24). The agent state is installed with the real CLI in a child JVM:
 * {@code Main apply --objects DIR --node node-a --netns pkb-node --rule-mode MODE --cluster-cidr
 * 10.128.0.0/14}, objects = one EgressService ({@code sourceIPBy: Network}, {@code network: "100"},
 * {@code status.host: ALL}) whose LoadBalancer Service (clusterIP 172.30.9.9) has N endpoints
 * 10.128.x.y on node-a. The planner also routes the clusterIP, so the kernel holds N+1 sources.
 * Table 100 gets a blackhole default route (the opted-in sources never send here).
 *
 * <p>N = 0 means no agent state at all in the node (nothing applied). The measured flow is a UDP
 * request/response between one client thread (setns into pkb-client) and one echo thread
 * (pkb-server), 64-byte payloads, one packet in flight; warm-up round trips first, then the timed
 * ones; median and p99 in µs. Every measurement is bounded in time (a deadline stops it early and the
 * count is printed), every receive has a 1 s timeout (a loss is counted, not timed).
 *
 * <p>Arguments: {@code [round trips (default 20000)] [warm-up (default 2000)] [sizes (default
 * 0,300,1000,10000)] [modes (default source,mark)]}.
 */
public final class PacketsBench {
  static final String CLIENT = "pkb-client";
  static final String NODE = "pkb-node";
  static final String SERVER = "pkb-server";
  static final int PORT = 7777;
  static final int PAYLOAD = 64;
  static final long MEASURE_DEADLINE_NANOS = TimeUnit.SECONDS.toNanos(45);
  static final int CMD_TIMEOUT_SECONDS = 120;

  record Result(int n, String mode, int sources, String installed, int count, int lost, double medianUs, double p99Us,
      double meanUs, double applySeconds) {}

  public static void main(String[] args) throws Exception {
    int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 20_000;
    int warmup = args.length > 1 ? Integer.parseInt(args[1]) : 2_000;
    int[] sizes = Arrays.stream((args.length > 2 ? args[2] : "0,300,1000,10000").split(","))
        .mapToInt(Integer::parseInt).toArray();
    String[] modes = (args.length > 3 ? args[3] : "source,mark").split(",");
    System.out.printf("per-packet round trip client <-> server through %s (did not opt in): %d round trips after %d"
        + " warm-up, UDP %d bytes; kernel %s%n", NODE, rounds, warmup, PAYLOAD, System.getProperty("os.version"));
    Path work = Files.createTempDirectory("packets-bench");
    List<Result> results = new ArrayList<>();
    try {
      for (String mode : modes) {
        for (int n : sizes) {
          Result r = runOne(work, mode, n, rounds, warmup);
          results.add(r);
          System.out.printf("  done: N=%d %s: %s, median %.1f µs (apply %.1f s)%n",
              n, mode, r.installed(), r.medianUs(), r.applySeconds());
        }
      }
    } finally {
      teardown();
    }
    System.out.println();
    System.out.println("| N | mode | installed in node | round trips (lost) | median µs | p99 µs | mean µs | median - N=0 µs | ratio median to N=0 |");
    System.out.println("|---:|---|---|---:|---:|---:|---:|---:|---:|");
    for (Result r : results) {
      Result base = results.stream().filter(b -> b.n() == 0 && b.mode().equals(r.mode())).findFirst().orElse(null);
      String ratio = base == null ? "-" : String.format(Locale.ROOT, "%.2f", r.medianUs() / base.medianUs());
      String delta = base == null ? "-" : String.format(Locale.ROOT, "%+.1f", r.medianUs() - base.medianUs());
      System.out.printf(Locale.ROOT, "| %,d | %s | %s | %d (%d) | %.1f | %.1f | %.1f | %s | %s |%n",
          r.n(), r.mode(), r.installed(), r.count(), r.lost(), r.medianUs(), r.p99Us(), r.meanUs(), delta, ratio);
    }
    Result base = results.stream().filter(b -> b.n() == 0 && b.mode().equals("mark")).findFirst().orElse(null);
    Result mark10k = results.stream().filter(b -> b.n() == 10_000 && b.mode().equals("mark")).findFirst().orElse(null);
    if (base != null && mark10k != null) {
      double ratio = mark10k.medianUs() / base.medianUs();
      System.out.printf(Locale.ROOT, "target: mark mode at 10,000 sources within 1.3x of no rules: %.2fx -> %s%n",
          ratio, ratio <= 1.3 ? "MET" : "NOT MET");
    }
  }

  static Result runOne(Path work, String mode, int n, int rounds, int warmup) throws Exception {
    teardown();
    setup();
    String installed = "nothing";
    double applySeconds = 0;
    if (n > 0) {
      Path dir = writeObjects(work.resolve(mode + "-" + n), n);
      String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
      long t0 = System.nanoTime();
      run(java, "-cp", System.getProperty("java.class.path"), "io.egressservice.cli.Main", "apply",
          "--objects", dir.toString(), "--node", "node-a", "--netns", NODE, "--rule-mode", mode,
          "--cluster-cidr", "10.128.0.0/14");
      applySeconds = (System.nanoTime() - t0) / 1e9;
      installed = verify(mode, n);
    }
    try (NetnsThread client = NetnsThread.enter(Optional.of(CLIENT));
        NetnsThread server = NetnsThread.enter(Optional.of(SERVER))) {
      DatagramSocket srv = server.call(() -> new DatagramSocket(new InetSocketAddress("10.201.0.2", PORT)));
      Future<?> echo = server.submit(() -> echo(srv));
      try {
        DatagramSocket cli = client.call(() -> new DatagramSocket(new InetSocketAddress("10.200.0.2", 0)));
        try {
          long[][] out = new long[1][];
          int[] lost = new int[1];
          client.call(() -> {
            measure(cli, warmup, new int[1]);
            out[0] = measure(cli, rounds, lost);
            return null;
          });
          long[] ns = out[0];
          Arrays.sort(ns);
          if (ns.length == 0) {
            throw new IllegalStateException("no round trip completed for N=" + n + " " + mode);
          }
          double mean = Arrays.stream(ns).average().orElse(0) / 1e3;
          return new Result(n, mode, n + 1, installed, ns.length, lost[0], ns[ns.length / 2] / 1e3,
              ns[Math.min(ns.length - 1, (int) (ns.length * 0.99))] / 1e3, mean, applySeconds);
        } finally {
          cli.close();
        }
      } finally {
        srv.close();
        echo.cancel(true);
      }
    }
  }

  /** Up to {@code count} round trips, stopped by the deadline; returns the completed ones in ns. */
  static long[] measure(DatagramSocket sock, int count, int[] lost) throws IOException {
    InetAddress dst = InetAddress.getByName("10.201.0.2");
    byte[] tx = new byte[PAYLOAD];
    byte[] rx = new byte[2048];
    DatagramPacket send = new DatagramPacket(tx, tx.length, dst, PORT);
    DatagramPacket recv = new DatagramPacket(rx, rx.length);
    sock.setSoTimeout(1000);
    long[] times = new long[count];
    int done = 0;
    long deadline = System.nanoTime() + MEASURE_DEADLINE_NANOS;
    for (int i = 0; i < count && System.nanoTime() < deadline; i++) {
      tx[0] = (byte) i;
      tx[1] = (byte) (i >> 8);
      tx[2] = (byte) (i >> 16);
      long t0 = System.nanoTime();
      sock.send(send);
      try {
        while (true) {
          recv.setLength(rx.length);
          sock.receive(recv);
          if (rx[0] == tx[0] && rx[1] == tx[1] && rx[2] == tx[2]) {
            break; // a late reply to an earlier lost request is skipped
          }
        }
      } catch (SocketTimeoutException e) {
        lost[0]++;
        continue;
      }
      times[done++] = System.nanoTime() - t0;
    }
    if (done < count) {
      System.out.printf("  note: %d of %d round trips completed (deadline %d s, %d lost)%n",
          done, count, TimeUnit.NANOSECONDS.toSeconds(MEASURE_DEADLINE_NANOS), lost[0]);
    }
    return Arrays.copyOf(times, done);
  }

  static void echo(DatagramSocket sock) {
    byte[] buf = new byte[2048];
    DatagramPacket p = new DatagramPacket(buf, buf.length);
    try {
      while (!sock.isClosed()) {
        p.setLength(buf.length);
        sock.receive(p);
        sock.send(p);
      }
    } catch (SocketException closed) {
      // stopped by close()
    } catch (IOException e) {
      System.err.println("echo: " + e);
    }
  }

  static Path writeObjects(Path dir, int endpoints) throws IOException {
    return io.egressservice.cli.BigObjects.write(dir, endpoints, "Network", "ALL", "objects.yaml");
  }

  /** Checks that the node holds the state for N endpoints (+ the clusterIP); returns a description. */
  static String verify(String mode, int n) {
    String rules = run("ip", "-n", NODE, "rule", "show");
    long all = rules.lines().filter(l -> !l.isBlank()).count();
    long from = rules.lines().filter(l -> l.contains("lookup 100") && !l.contains("fwmark")).count();
    if (mode.equals("source")) {
      if (from != n + 1) {
        throw new IllegalStateException("expected " + (n + 1) + " 'from EP lookup 100' rules, found " + from);
      }
      return String.format(Locale.ROOT, "%d ip rules", all);
    }
    String map = run("ip", "netns", "exec", NODE, "nft", "list", "map", "inet", "egress_service_agent", "mark_v4");
    int jumps = 0;
    for (int i = map.indexOf("jump"); i >= 0; i = map.indexOf("jump", i + 1)) {
      jumps++;
    }
    if (jumps != n + 1 || from != 0) {
      throw new IllegalStateException("expected " + (n + 1) + " mark_v4 elements and no per-source rule, found "
          + jumps + " and " + from);
    }
    return String.format(Locale.ROOT, "%d ip rules, %d map elements", all, jumps);
  }

  static void setup() {
    for (String ns : List.of(CLIENT, NODE, SERVER)) {
      run("ip", "netns", "add", ns);
      run("ip", "-n", ns, "link", "set", "lo", "up");
    }
    run("ip", "link", "add", "pkb-c0", "netns", CLIENT, "type", "veth", "peer", "name", "pkb-n0", "netns", NODE);
    run("ip", "link", "add", "pkb-s0", "netns", SERVER, "type", "veth", "peer", "name", "pkb-n1", "netns", NODE);
    run("ip", "-n", CLIENT, "addr", "add", "10.200.0.2/24", "dev", "pkb-c0");
    run("ip", "-n", NODE, "addr", "add", "10.200.0.1/24", "dev", "pkb-n0");
    run("ip", "-n", NODE, "addr", "add", "10.201.0.1/24", "dev", "pkb-n1");
    run("ip", "-n", SERVER, "addr", "add", "10.201.0.2/24", "dev", "pkb-s0");
    run("ip", "-n", CLIENT, "link", "set", "pkb-c0", "up");
    run("ip", "-n", NODE, "link", "set", "pkb-n0", "up");
    run("ip", "-n", NODE, "link", "set", "pkb-n1", "up");
    run("ip", "-n", SERVER, "link", "set", "pkb-s0", "up");
    run("ip", "-n", CLIENT, "route", "add", "default", "via", "10.200.0.1");
    run("ip", "-n", SERVER, "route", "add", "default", "via", "10.201.0.1");
    run("ip", "netns", "exec", NODE, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1");
    run("ip", "-n", NODE, "route", "add", "blackhole", "default", "table", "100");
  }

  static void teardown() {
    for (String ns : List.of(CLIENT, NODE, SERVER)) {
      if (Files.exists(Path.of("/run/netns", ns))) {
        run("ip", "netns", "del", ns);
      }
    }
  }

  /** Runs a command with a timeout; output (stdout+stderr) returned, non-zero exit or timeout throws. */
  static String run(String... cmd) {
    try {
      File log = File.createTempFile("packets-bench", ".out");
      try {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log).start();
        if (!p.waitFor(CMD_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
          p.destroyForcibly();
          throw new IllegalStateException(String.join(" ", cmd) + " timed out after " + CMD_TIMEOUT_SECONDS + " s");
        }
        String out = Files.readString(log.toPath(), StandardCharsets.UTF_8);
        if (p.exitValue() != 0) {
          throw new IllegalStateException(String.join(" ", cmd) + " failed (" + p.exitValue() + "): " + out);
        }
        return out;
      } finally {
        Files.deleteIfExists(log.toPath());
      }
    } catch (IOException e) {
      throw new IllegalStateException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
