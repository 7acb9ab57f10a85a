package io.egressservice.cluster;

import static org.awaitility.Awaitility.await;

import io.egressservice.allocator.AllocatorConfig;
import io.egressservice.allocator.AllocatorRunner;
import io.egressservice.allocator.HostHealth;
import io.egressservice.allocator.HostProbes;
import io.egressservice.ip.IpFamily;
import io.egressservice.testbed.Addresses;
import io.egressservice.testbed.AgentProcess;
import io.egressservice.testbed.Cluster;
import io.egressservice.testbed.Traffic;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.ovn.k8s.v1.EgressServiceSpec.SourceIPBy;

/**
 * Failover in the namespace cluster ({@link Cluster#standard()}), shared by {@link FailoverClusterTest} and the
 * benchmark: service {@code web} (LB IP 5.5.5.5... {@link Addresses#lbIp}) has endpoints pod-a1, pod-b1 and pod-c1,
 * {@code sourceIPBy: LoadBalancerIP}, no network (main table: uplink 1). The agents run {@code --allocator=false};
 * the allocator runs here, as its own Deployment would, and probes the agents from the lan namespace. Every node's
 * pod sends a steady UDP stream (one socket each) to the external host. Variants for the benchmark: the allocator
 * in the agents (its leader dies with the host: {@link #withAllocatorInAgents}) and a faster stream
 * ({@link #withStreamInterval}, for planned moves).
 */
public final class FailoverScenario implements AutoCloseable {
  public static final String SERVICE = "web";
  public static final String LB_IP = Addresses.lbIp(5, IpFamily.V4);
  public static final Duration STREAM_INTERVAL = Duration.ofMillis(10);

  /**
   * One power-off: the time until the new status.host was seen (polled every 20 ms), and until each stream reached
   * the external host through the new host with the LB IP.
   */
  public record Outcome(String oldHost, String newHost, double hostSeconds, List<Double> recoverySeconds, long leaked,
      List<String> leakedSamples) {
    public double max() {
      return recoverySeconds.stream().mapToDouble(Double::doubleValue).max().orElse(Double.NaN);
    }
  }

  private final Cluster cluster;
  /** Absent when the agents run the allocator themselves. */
  private final Optional<AllocatorRunner> allocator;
  private final Duration interval;
  private final List<Traffic.Stream> streams = new ArrayList<>();
  private final List<String> senders;

  public FailoverScenario(String noHost) {
    this(noHost, STREAM_INTERVAL, false);
  }

  /** The streams send one datagram per {@code interval} (the allocator runs here, as usual). */
  public static FailoverScenario withStreamInterval(String noHost, Duration interval) {
    return new FailoverScenario(noHost, interval, false);
  }

  /** The agents run the allocator (default lease, kube-vip's timings); {@link #allocator()} is not available. */
  public static FailoverScenario withAllocatorInAgents(String noHost) {
    return new FailoverScenario(noHost, STREAM_INTERVAL, true);
  }

  private FailoverScenario(String noHost, Duration interval, boolean allocatorInAgents) {
    this.interval = interval;
    cluster = allocatorInAgents ? Cluster.standard().agentArgs("--no-host=" + noHost).start()
        : Cluster.standard().agentArgs("--allocator=false", "--no-host=" + noHost).start();
    Optional<AllocatorRunner> runner = Optional.empty();
    try {
      if (!allocatorInAgents) {
        AllocatorConfig config = AllocatorConfig.defaults().withLease(Duration.ofSeconds(4), Duration.ofSeconds(3),
            Duration.ofSeconds(1)).withProbes(new HostProbes(true, HostProbes.DEFAULT_PORT, Duration.ofMillis(500),
            Duration.ofSeconds(1), 4, Optional.of(cluster.netns("lan").name()), HostHealth.Settings.defaults()));
        runner = Optional.of(AllocatorRunner.start(cluster.api().client(), AgentProcess.LEASE_NAMESPACE, "allocator",
            config));
      }
      allocator = runner;
      cluster.api().createLoadBalancer(SERVICE, "172.30.0.10", "fd02::10",
          List.of(LB_IP, Addresses.lbIp(5, IpFamily.V6)),
          List.of(cluster.pod("pod-a1"), cluster.pod("pod-b1"), cluster.pod("pod-c1")));
      cluster.api().applyEgressService(SERVICE, SourceIPBy.LOADBALANCERIP, "", Optional.empty());
      senders = List.of("pod-a1", "pod-b1", "pod-c1");
      // streams begin once every pod leaves with the LB IP (a flow's NAT is chosen by its first packet)
      for (String p : senders) {
        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200)).until(() ->
            cluster.traffic().udp(p, Addresses.EXTERNAL_V4).seen().stream().anyMatch(x -> x.source().equals(LB_IP)));
      }
      for (String p : senders) {
        streams.add(cluster.traffic().stream(p, Addresses.EXTERNAL_V4, interval));
      }
    } catch (RuntimeException | Error e) {
      streams.forEach(Traffic.Stream::close);
      runner.ifPresent(AllocatorRunner::close);
      cluster.close();
      throw e;
    }
  }

  public Cluster cluster() {
    return cluster;
  }

  /** The allocator running in this JVM; not available {@link #withAllocatorInAgents}. */
  public AllocatorRunner allocator() {
    return allocator.orElseThrow(() -> new IllegalStateException("the agents run the allocator in this scenario"));
  }

  public Duration streamInterval() {
    return interval;
  }

  public String host() {
    return cluster.api().host(SERVICE).orElse("");
  }

  /** Waits until there is a host and every stream of a live node arrives through it with the LB IP. */
  public String awaitSteady(Duration limit) {
    await().atMost(limit).pollInterval(Duration.ofMillis(100)).until(() -> !host().isEmpty());
    String host = host();
    String where = "ext-" + host.substring(5) + "1";
    for (int i = 0; i < senders.size(); i++) {
      if (!cluster.pod(senders.get(i)).node().equals(host) && !alive(cluster.pod(senders.get(i)).node())) {
        continue;
      }
      Traffic.Stream s = streams.get(i);
      long since = System.nanoTime();
      try {
        await().atMost(limit).pollInterval(Duration.ofMillis(50)).until(() -> s.arrivals().stream()
            .anyMatch(a -> a.sentNanos() > since && a.where().equals(where) && a.source().equals(LB_IP)));
      } catch (RuntimeException e) {
        List<Traffic.Arrival> all = s.arrivals();
        throw new IllegalStateException("stream of " + senders.get(i) + " does not arrive via " + where + " from "
            + LB_IP + "; last seen: " + all.subList(Math.max(0, all.size() - 3), all.size()), e);
      }
    }
    return host;
  }

  private final java.util.Set<String> off = new java.util.HashSet<>();

  private boolean alive(String node) {
    return !off.contains(node);
  }

  /**
   * Powers the host off, waits for the new host, and measures, for the streams of the live nodes, the time from
   * the power-off to the first datagram sent after it that reached the external host through the new host's
   * uplink with the LB IP; counts datagrams sent after the power-off seen outside with another source.
   */
  public Outcome powerOffHost(Duration limit) {
    String old = host();
    long t0 = System.nanoTime();
    cluster.node(old).powerOff();
    off.add(old);
    await().atMost(limit).pollInterval(Duration.ofMillis(20)).until(() -> !host().isEmpty() && !host().equals(old));
    double hostSeconds = (System.nanoTime() - t0) / 1e9;
    String now = host();
    String where = "ext-" + now.substring(5) + "1";
    List<Double> recovery = new ArrayList<>();
    for (int i = 0; i < senders.size(); i++) {
      if (cluster.pod(senders.get(i)).node().equals(old)) {
        continue;
      }
      Traffic.Stream s = streams.get(i);
      Traffic.Arrival first;
      try {
        first = await().atMost(limit).pollInterval(Duration.ofMillis(20))
            .until(() -> s.arrivals().stream()
                .filter(a -> a.sentNanos() > t0 && a.where().equals(where) && a.source().equals(LB_IP)).findFirst(),
                Optional::isPresent).orElseThrow();
      } catch (RuntimeException e) {
        List<Traffic.Arrival> all = s.arrivals();
        throw new IllegalStateException("after " + old + " -> " + now + " the stream of " + senders.get(i)
            + " does not arrive via " + where + " from " + LB_IP + "; last seen: "
            + all.subList(Math.max(0, all.size() - 3), all.size()), e);
      }
      recovery.add((first.sentNanos() - t0) / 1e9);
    }
    // a little more traffic through the new host before counting leaks
    pause(500);
    long leaked = 0;
    List<String> samples = new ArrayList<>();
    for (Traffic.Stream s : streams) {
      for (Traffic.Arrival a : s.arrivals()) {
        if (a.sentNanos() > t0 && !a.source().equals(LB_IP)) {
          leaked++;
          if (samples.size() < 5) {
            samples.add(a.source() + " at " + a.where());
          }
        }
      }
    }
    return new Outcome(old, now, hostSeconds, recovery, leaked, samples);
  }

  /** Datagrams sent after {@code t0} (monotonic) that were seen outside with a source other than the LB IP. */
  public long leakedSince(long t0) {
    return streams.stream().flatMap(s -> s.arrivals().stream())
        .filter(a -> a.sentNanos() > t0 && !a.source().equals(LB_IP)).count();
  }

  /** Powers a node on again (its agent ready) and waits until it may host again. */
  public void powerOn(String node) {
    cluster.node(node).powerOn();
    off.remove(node);
    allocator.ifPresent(a -> await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100))
        .until(() -> !a.allocator().unreachableNodes().contains(node)));
  }

  /** A stream replaced because it did not arrive through the host with the LB IP; what it last showed. */
  public record Renewed(String pod, long seenWithAnotherSource, List<Traffic.Arrival> lastSeen) {}

  /**
   * Every live node's stream that does not reach the external host through the current host with the LB IP within
   * {@code limit} is replaced by a new stream (a new socket: a new flow), so that later runs can measure; returns
   * those replaced (for the caller to report: it is a finding, not a recovery).
   */
  public List<Renewed> renewStuckStreams(Duration limit) {
    await().atMost(limit).pollInterval(Duration.ofMillis(100)).until(() -> !host().isEmpty());
    String where = "ext-" + host().substring(5) + "1";
    long since = System.nanoTime();
    List<Renewed> renewed = new ArrayList<>();
    for (int i = 0; i < senders.size(); i++) {
      if (!alive(cluster.pod(senders.get(i)).node())) {
        continue;
      }
      Traffic.Stream s = streams.get(i);
      try {
        await().atMost(limit).pollInterval(Duration.ofMillis(50)).until(() -> s.arrivals().stream()
            .anyMatch(a -> a.sentNanos() > since && a.where().equals(where) && a.source().equals(LB_IP)));
      } catch (RuntimeException e) {
        List<Traffic.Arrival> all = s.arrivals();
        renewed.add(new Renewed(senders.get(i), all.stream().filter(a -> !a.source().equals(LB_IP)).count(),
            List.copyOf(all.subList(Math.max(0, all.size() - 2), all.size()))));
        s.close();
        streams.set(i, cluster.traffic().stream(senders.get(i), Addresses.EXTERNAL_V4, interval));
      }
    }
    return renewed;
  }

  /**
   * After {@link #powerOn}: whether the streams of the node's pods reach the external host through the current host
   * with the LB IP again within {@code limit}, on their own (same sockets, same flows). Those that do not are
   * replaced by new streams (new sockets: new flows), so that later runs can measure; the caller reports it.
   */
  public boolean awaitStreamsBack(String node, Duration limit) {
    String where = "ext-" + host().substring(5) + "1";
    long since = System.nanoTime();
    boolean back = true;
    for (int i = 0; i < senders.size(); i++) {
      if (!cluster.pod(senders.get(i)).node().equals(node)) {
        continue;
      }
      Traffic.Stream s = streams.get(i);
      try {
        await().atMost(limit).pollInterval(Duration.ofMillis(50)).until(() -> s.arrivals().stream()
            .anyMatch(a -> a.sentNanos() > since && a.where().equals(where) && a.source().equals(LB_IP)));
      } catch (RuntimeException e) {
        back = false;
        s.close();
        streams.set(i, cluster.traffic().stream(senders.get(i), Addresses.EXTERNAL_V4, interval));
      }
    }
    return back;
  }

  /** Datagrams of every stream sent within [from, to] (monotonic) that were not seen anywhere. */
  public long lostBetween(long fromNanos, long toNanos) {
    return lostBetween(fromNanos, toNanos, node -> true);
  }

  /** {@link #lostBetween(long, long)} for the streams of the pods on the nodes {@code senderNode} accepts. */
  public long lostBetween(long fromNanos, long toNanos, java.util.function.Predicate<String> senderNode) {
    long lost = 0;
    for (int i = 0; i < senders.size(); i++) {
      String node = cluster.pod(senders.get(i)).node();
      if (!alive(node) || !senderNode.test(node)) {
        continue;
      }
      List<Traffic.Arrival> in = streams.get(i).arrivals().stream()
          .filter(a -> a.sentNanos() >= fromNanos && a.sentNanos() <= toNanos).toList();
      if (in.isEmpty()) {
        lost += (toNanos - fromNanos) / interval.toNanos();
        continue;
      }
      long minSeq = in.stream().mapToLong(Traffic.Arrival::seq).min().orElseThrow();
      long maxSeq = in.stream().mapToLong(Traffic.Arrival::seq).max().orElseThrow();
      lost += (maxSeq - minSeq + 1) - in.stream().mapToLong(Traffic.Arrival::seq).distinct().count();
    }
    return lost;
  }

  private static void pause(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public void close() {
    streams.forEach(Traffic.Stream::close);
    allocator.ifPresent(AllocatorRunner::close);
    cluster.close();
  }
}
