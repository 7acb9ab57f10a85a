package io.egressservice.bench;

import io.egressservice.ip.IpFamily;
import io.egressservice.testbed.Addresses;
import io.egressservice.testbed.Cluster;
import io.egressservice.testbed.Traffic;
import java.io.BufferedReader;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.ovn.k8s.v1.EgressServiceSpec.SourceIPBy;

/**
 * Benchmark, not a test (run by bench/steering.sh, never by mvn verify): what steering costs, in the namespace
 * cluster ({@link Cluster}) with the real agent process on each node.
 *
 * <p>Cluster: node-a (two uplinks; pod-a1 opted in, pod-a2 not) and node-b (one uplink; pod-b1 opted in, pod-b2
 * not). Service {@code bench}: {@code sourceIPBy: LoadBalancerIP}, {@code network: "100"}, host node-a (a
 * nodeSelector), endpoints pod-a1 and pod-b1. So pod-a1 is "a pod on the host" and pod-b1 "a steered pod": both
 * leave through node-a's second uplink with the LB IP, pod-b1 after a trip over the node network to node-a.
 *
 * <ul>
 *   <li>throughput: one TCP connection from the pod to the external host's sink for {@code seconds}, 64 KiB
 *       writes, bytes counted by the sink; runs alternate host pod / steered pod, {@code repeats} each; median.
 *   <li>latency: UDP request/response (64 bytes, one in flight) and TCP request/response on one connection
 *       (64 bytes, TCP_NODELAY) to the external host's echo; p50 and p99 in µs, alternating as above.
 *   <li>per-packet cost for traffic that did not opt in (pod-a2 on the host node, pod-b2 on the other node, each
 *       leaving by its own node's main uplink): the same UDP round trip before the EgressService exists (no agent
 *       state) and with it in force (each: a warm-up pass, then the median of three runs alternating the pods).
 * </ul>
 *
 * <p>Arguments: {@code [seconds per throughput run (3)] [repeats (3)] [round trips (10000)] [rule mode (source)]
 * [settings to try (none; comma-separated, see SteeringPath#tune)]}. Every run prints the offload state of the
 * steered path ({@link SteeringPath#offloads}), full-size UDP and the fragmentation counters, bytes per packet on
 * each device, and the CPU per GB of each pod's throughput runs.
 */
public final class SteeringBench {
  static final String SERVICE = "bench";

  record Latency(int count, int lost, double p50Us, double p99Us) {}

  /** Held so the level set on it is not lost when java.util.logging drops unreferenced loggers. */
  static final java.util.logging.Logger MOCK_LOG = java.util.logging.Logger.getLogger("io.fabric8.mockwebserver");

  public static void main(String[] args) throws Exception {
    MOCK_LOG.setLevel(java.util.logging.Level.WARNING);
    int seconds = args.length > 0 ? Integer.parseInt(args[0]) : 3;
    int repeats = args.length > 1 ? Integer.parseInt(args[1]) : 3;
    int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 10_000;
    String mode = args.length > 3 ? args[3] : "source";
    List<String> settings = args.length > 4 && !args[4].equals("none") ? List.of(args[4].split(",")) : List.of();
    System.out.printf(Locale.ROOT, "steering: host pod (pod-a1 on node-a) vs steered pod (pod-b1 on node-b, host node-a),"
        + " both through node-a's uplink 2 with the LB IP; rule mode %s; %d s x %d throughput runs, %d round trips;"
        + " java %s, kernel %s, %d CPUs%n", mode, seconds, repeats, rounds, System.getProperty("java.version"),
        System.getProperty("os.version"), Runtime.getRuntime().availableProcessors());
    try (Cluster c = Cluster.builder().node("node-a", 2, 2).node("node-b", 1, 2).agentArgs("--rule-mode", mode)
        .progress(s -> System.out.println("  " + s)).start()) {
      String ext = Addresses.EXTERNAL_V4;
      Map<String, Latency> before = notOptedIn(c, ext, rounds);

      c.api().createLoadBalancer(SERVICE, "172.30.0.10", "fd02::10",
          List.of(Addresses.lbIp(5, IpFamily.V4), Addresses.lbIp(5, IpFamily.V6)), List.of(c.pod("pod-a1"), c.pod("pod-b1")));
      c.api().applyEgressService(SERVICE, SourceIPBy.LOADBALANCERIP, "100", Optional.of("node-a"));
      awaitSeen(c, "pod-a1", "ext-a2");
      awaitSeen(c, "pod-b1", "ext-a2");
      System.out.println("  service in force: pod-a1 and pod-b1 seen at ext-a2 with " + Addresses.lbIp(5, IpFamily.V4));
      for (String setting : settings) {
        System.out.println("  setting " + SteeringPath.tune(c, setting));
      }
      SteeringPath.offloads(c).forEach(System.out::println);
      mtu(c, ext);

      Map<String, List<Double>> mbps = new LinkedHashMap<>();
      Map<String, List<Latency>> udp = new LinkedHashMap<>();
      Map<String, List<Latency>> tcp = new LinkedHashMap<>();
      for (String pod : List.of("pod-a1", "pod-b1")) {
        mbps.put(pod, new ArrayList<>());
        udp.put(pod, new ArrayList<>());
        tcp.put(pod, new ArrayList<>());
        udpRtt(c, pod, ext, rounds); // warm-up
        throughput(c, pod, ext, Duration.ofSeconds(1));
      }
      Map<String, List<Double>> cpuPerGb = new LinkedHashMap<>();
      cpuPerGb.put("pod-a1", new ArrayList<>());
      cpuPerGb.put("pod-b1", new ArrayList<>());
      Map<String, List<Double>> senderPerGb = new LinkedHashMap<>();
      senderPerGb.put("pod-a1", new ArrayList<>());
      senderPerGb.put("pod-b1", new ArrayList<>());
      java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
      for (int r = 0; r < repeats; r++) {
        System.out.printf(Locale.ROOT, "  pair %d: load average %s%n", r + 1, SteeringPath.loadAverage());
        for (String pod : List.of("pod-a1", "pod-b1")) {
          long cpu0 = processCpuNanos();
          long sender0 = threads.getCurrentThreadCpuTime();
          long t0 = System.nanoTime();
          double m = throughput(c, pod, ext, Duration.ofSeconds(seconds));
          double wall = (System.nanoTime() - t0) / 1e9;
          double cpu = (processCpuNanos() - cpu0) / 1e9;
          double sender = (threads.getCurrentThreadCpuTime() - sender0) / 1e9;
          double gigabytes = m * 1e6 / 8 * wall / 1e9;
          cpuPerGb.get(pod).add(cpu / gigabytes);
          senderPerGb.get(pod).add(sender / gigabytes);
          System.out.printf(Locale.ROOT, "  run %d %s: %.2f CPU s in %.2f s: %.2f CPU s per GB, %.2f of them the sending"
              + " thread's%n", r + 1, pod, cpu, wall, cpu / gigabytes, sender / gigabytes);
          mbps.get(pod).add(m);
          Latency u = udpRtt(c, pod, ext, rounds);
          udp.get(pod).add(u);
          Latency t = tcpRtt(c, pod, ext, rounds);
          tcp.get(pod).add(t);
          System.out.printf(Locale.ROOT, "  run %d %s: %.0f Mbit/s, UDP p50 %.1f µs p99 %.1f µs, TCP p50 %.1f µs p99 %.1f µs%n",
              r + 1, pod, m, u.p50Us(), u.p99Us(), t.p50Us(), t.p99Us());
        }
      }
      // where the steered and the host pod's bytes went, skb by skb, and whether anything was fragmented
      for (String pod : List.of("pod-b1", "pod-a1")) {
        Map<SteeringPath.Device, long[]> n0 = SteeringPath.counters(c);
        Map<String, long[]> f0 = SteeringPath.fragments(c);
        double m = throughput(c, pod, ext, Duration.ofSeconds(seconds));
        Map<String, long[]> f1 = SteeringPath.fragments(c);
        Map<SteeringPath.Device, long[]> n1 = SteeringPath.counters(c);
        System.out.printf(Locale.ROOT, "  %s, one more %d s run, %.0f Mbit/s, bytes per packet on the way (a veth's packet"
            + " is an skb):%n", pod, seconds, m);
        SteeringPath.packetSizes(n0, n1).forEach(System.out::println);
        System.out.println("  fragmentation: " + SteeringPath.fragmentDelta(f0, f1));
      }
      System.out.println("  after: " + SteeringPath.routeGet(c, "pod-b1", ext));
      Map<String, Latency> after = notOptedIn(c, ext, rounds);

      System.out.println();
      System.out.println("| pod | path | throughput Mbit/s (median of " + repeats + ") | UDP RTT p50 / p99 µs | TCP RTT p50 / p99 µs |");
      System.out.println("|---|---|---:|---:|---:|");
      for (String pod : List.of("pod-a1", "pod-b1")) {
        System.out.printf(Locale.ROOT, "| %s | %s | %.0f | %.1f / %.1f | %.1f / %.1f |%n", pod,
            pod.equals("pod-a1") ? "on the host node-a" : "steered node-b -> node-a",
            median(mbps.get(pod)), median(udp.get(pod).stream().map(Latency::p50Us).toList()),
            median(udp.get(pod).stream().map(Latency::p99Us).toList()),
            median(tcp.get(pod).stream().map(Latency::p50Us).toList()),
            median(tcp.get(pod).stream().map(Latency::p99Us).toList()));
      }
      double ratio = median(mbps.get("pod-b1")) / median(mbps.get("pod-a1"));
      double addedUdp = median(udp.get("pod-b1").stream().map(Latency::p50Us).toList())
          - median(udp.get("pod-a1").stream().map(Latency::p50Us).toList());
      double addedTcp = median(tcp.get("pod-b1").stream().map(Latency::p50Us).toList())
          - median(tcp.get("pod-a1").stream().map(Latency::p50Us).toList());
      List<Double> pairs = new ArrayList<>();
      for (int r = 0; r < repeats; r++) {
        pairs.add(mbps.get("pod-b1").get(r) / mbps.get("pod-a1").get(r));
      }
      System.out.printf(Locale.ROOT, "steered / host throughput: %.2f (ratio of the medians), %.2f (median of the %d"
          + " back-to-back pairs, min %.2f, max %.2f); added latency (p50): UDP %+.1f µs, TCP %+.1f µs%n", ratio,
          median(pairs), repeats, pairs.stream().mapToDouble(Double::doubleValue).min().orElse(0),
          pairs.stream().mapToDouble(Double::doubleValue).max().orElse(0), addedUdp, addedTcp);
      System.out.printf(Locale.ROOT, "CPU per GB (the bench process: sender, sink and the softirq work run in their"
          + " context; median of %d): host pod %.2f s, steered pod %.2f s (%.2fx); the sending thread's share (the rest"
          + " runs in the sink's context, where the ACKs that release the next segments arrive): %.2f s, %.2f s"
          + " (%.2fx); settings %s%n",
          repeats, median(cpuPerGb.get("pod-a1")), median(cpuPerGb.get("pod-b1")),
          median(cpuPerGb.get("pod-b1")) / median(cpuPerGb.get("pod-a1")),
          median(senderPerGb.get("pod-a1")), median(senderPerGb.get("pod-b1")),
          median(senderPerGb.get("pod-b1")) / median(senderPerGb.get("pod-a1")),
          settings.isEmpty() ? "none (the kernel's defaults)" : settings);
      System.out.println();
      System.out.println("| pod that did not opt in | node | UDP RTT p50 / p99 µs, no agent state | with the service in force | p50 change |");
      System.out.println("|---|---|---:|---:|---:|");
      for (String pod : List.of("pod-a2", "pod-b2")) {
        Latency b = before.get(pod);
        Latency a = after.get(pod);
        System.out.printf(Locale.ROOT, "| %s | %s | %.1f / %.1f | %.1f / %.1f | %+.1f µs |%n", pod, c.pod(pod).node(),
            b.p50Us(), b.p99Us(), a.p50Us(), a.p99Us(), a.p50Us() - b.p50Us());
      }
    }
    System.exit(0);
  }

  /**
   * CPU time of this process. The sender and the sink are its threads, and a veth delivers in the context of the
   * thread that sent (the backlog runs when its syscall re-enables softirqs): the data in the sender's, or in the
   * sink's when its ACK releases the next segments; so the forwarding, encapsulation and NAT of every namespace on
   * the way is counted here too (without CONFIG_IRQ_TIME_ACCOUNTING, as on the bench machine, softirq work run in a
   * task's context is that task's CPU time); ksoftirqd's and the agents' is not.
   */
  static long processCpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean())
        .getProcessCpuTime();
  }

  /**
   * Full-size UDP from the steered pod (payload 1472: 1500 on the pod's veth) with each IP_MTU_DISCOVER mode, 20
   * datagrams each, and the fragmentation counters of every namespace on the way around each; the pod's route
   * (with the PMTU it learned) before and after. The throughput runs are the full-size TCP stream.
   */
  static void mtu(Cluster c, String ext) throws IOException {
    System.out.println("  MTU: " + SteeringPath.routeGet(c, "pod-b1", ext));
    for (int mode : new int[] {2, 1, 0}) {
      Map<String, long[]> f0 = SteeringPath.fragments(c);
      SteeringPath.Datagrams d = SteeringPath.fullSizeUdp(c, "pod-b1", ext, 1472, mode, 20);
      Map<String, long[]> f1 = SteeringPath.fragments(c);
      System.out.printf(Locale.ROOT, "  MTU: 20 UDP datagrams of 1472 bytes, %s: %d sent, %d refused (EMSGSIZE), %d"
          + " echoed full size; %s%n", d.mode(), d.sent(), d.tooBig(), d.echoed(), SteeringPath.fragmentDelta(f0, f1));
    }
    System.out.println("  MTU: " + SteeringPath.routeGet(c, "pod-b1", ext));
  }

  /** pod-a2 and pod-b2: a warm-up pass, then three measurements alternating between them; the median p50 and p99. */
  static Map<String, Latency> notOptedIn(Cluster c, String ext, int rounds) throws IOException {
    Map<String, List<Latency>> runs = new LinkedHashMap<>();
    for (String pod : List.of("pod-a2", "pod-b2")) {
      udpRtt(c, pod, ext, rounds);
      runs.put(pod, new ArrayList<>());
    }
    for (int r = 0; r < 3; r++) {
      for (String pod : runs.keySet()) {
        runs.get(pod).add(udpRtt(c, pod, ext, rounds));
      }
    }
    Map<String, Latency> out = new LinkedHashMap<>();
    runs.forEach((pod, list) -> out.put(pod, new Latency(list.get(0).count(), list.stream().mapToInt(Latency::lost).sum(),
        median(list.stream().map(Latency::p50Us).toList()), median(list.stream().map(Latency::p99Us).toList()))));
    return out;
  }

  static void awaitSeen(Cluster c, String pod, String where) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (System.nanoTime() < deadline) {
      Traffic.Probe p = c.traffic().udp(pod, Addresses.EXTERNAL_V4);
      if (p.seen().size() == 1 && p.seen().get(0).where().equals(where)
          && p.seen().get(0).source().equals(Addresses.lbIp(5, IpFamily.V4))) {
        return;
      }
      Thread.sleep(100);
    }
    throw new IllegalStateException(pod + " is not seen at " + where + " with the LB IP within 30 s (steering missing?)");
  }

  /** Mbit/s of one TCP connection from {@code pod} to the sink for {@code length}, as the sink counted it. */
  static double throughput(Cluster c, String pod, String dst, Duration length) throws IOException {
    Socket s = connected(c, pod, dst, Traffic.SINK_PORT);
    try (s) {
      s.setSoTimeout(10_000);
      OutputStream out = s.getOutputStream();
      out.write("bench\n".getBytes(StandardCharsets.UTF_8));
      byte[] chunk = new byte[64 * 1024];
      long start = System.nanoTime();
      long end = start + length.toNanos();
      while (System.nanoTime() < end) {
        out.write(chunk);
      }
      s.shutdownOutput();
      String reply = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8)).readLine();
      double secs = (System.nanoTime() - start) / 1e9;
      if (reply == null || !reply.startsWith("got ")) {
        throw new IllegalStateException("the sink did not answer " + pod + ": " + reply);
      }
      long bytes = Long.parseLong(reply.split(" ")[1]);
      return bytes * 8 / secs / 1e6;
    }
  }

  /** A TCP connection made on the pod's namespace thread (a Socket's file descriptor is created lazily). */
  static Socket connected(Cluster c, String pod, String dst, int port) {
    return c.traffic().thread(pod).call(() -> {
      Socket s = new Socket();
      s.connect(new InetSocketAddress(InetAddress.getByName(dst), port), 2000);
      return s;
    });
  }

  static Latency udpRtt(Cluster c, String pod, String dst, int count) throws IOException {
    DatagramSocket s = c.traffic().thread(pod).call(() -> new DatagramSocket(new InetSocketAddress("0.0.0.0", 0)));
    try (s) {
      s.setSoTimeout(1000);
      s.connect(InetAddress.getByName(dst), Traffic.RTT_PORT);
      byte[] tx = new byte[64];
      byte[] rx = new byte[2048];
      DatagramPacket recv = new DatagramPacket(rx, rx.length);
      long[] times = new long[count];
      int done = 0;
      int lost = 0;
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      for (int i = 0; i < count && System.nanoTime() < deadline; i++) {
        tx[0] = (byte) i;
        tx[1] = (byte) (i >> 8);
        tx[2] = (byte) (i >> 16);
        long t0 = System.nanoTime();
        s.send(new DatagramPacket(tx, tx.length));
        try {
          do {
            recv.setLength(rx.length);
            s.receive(recv);
          } while (rx[0] != tx[0] || rx[1] != tx[1] || rx[2] != tx[2]); // a late answer to a lost one is skipped
        } catch (SocketTimeoutException e) {
          lost++;
          continue;
        }
        times[done++] = System.nanoTime() - t0;
      }
      return latency(Arrays.copyOf(times, done), lost);
    }
  }

  static Latency tcpRtt(Cluster c, String pod, String dst, int count) throws IOException {
    Socket s = connected(c, pod, dst, Traffic.RTT_PORT);
    try (s) {
      s.setTcpNoDelay(true);
      s.setSoTimeout(2000);
      OutputStream out = s.getOutputStream();
      DataInputStream in = new DataInputStream(s.getInputStream());
      byte[] tx = new byte[64];
      byte[] rx = new byte[64];
      long[] times = new long[count];
      int done = 0;
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      for (int i = 0; i < count && System.nanoTime() < deadline; i++) {
        long t0 = System.nanoTime();
        out.write(tx);
        in.readFully(rx);
        times[done++] = System.nanoTime() - t0;
      }
      return latency(Arrays.copyOf(times, done), 0);
    }
  }

  static Latency latency(long[] ns, int lost) {
    if (ns.length == 0) {
      throw new IllegalStateException("no round trip completed (" + lost + " lost)");
    }
    Arrays.sort(ns);
    return new Latency(ns.length, lost, ns[ns.length / 2] / 1e3, ns[Math.min(ns.length - 1, (int) (ns.length * 0.99))] / 1e3);
  }

  static double median(List<Double> values) {
    List<Double> sorted = values.stream().sorted().toList();
    return sorted.get(sorted.size() / 2);
  }
}
