package io.egressservice.testbed.chaos;

import io.egressservice.ip.IpFamily;
import io.egressservice.testbed.Addresses;
import io.egressservice.testbed.ApiServer;
import io.egressservice.testbed.Cluster;
import io.egressservice.testbed.Traffic;
import io.fabric8.kubernetes.api.model.LoadBalancerIngressBuilder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceSpec.SourceIPBy;

/**
 * What the cluster carries during a soak. Every node has three pods: pods 1 and 2 are the endpoints of the two
 * judged LoadBalancerIP services ({@code judged-1}: every node's pod 1, {@code judged-2}: every node's pod 2), pod 3
 * opts into nothing. Each of those pods sends a steady UDP stream (one socket) to the external host, and a prober
 * sends single datagrams from new sockets (new flows) round the pods. The other services ({@code churn-N}, of both
 * {@code sourceIPBy} kinds) have endpoints at pod addresses no namespace answers for (index 100 and up): they give
 * the kernel state to converge and the churn to absorb without changing who a judged packet belongs to, so the
 * judge never has to guess whether a pod was opted in when it sent. The churn (endpoints, EgressServices pinned,
 * freed, deleted and created again, LB IPs moved) goes through the test's own client, straight to the API server:
 * it goes on while a fault cuts the agents off, so what they must catch up with after it is real.
 */
final class Workload implements AutoCloseable {
  static final String JUDGED_PREFIX = "judged-";
  static final int PODS_PER_NODE = 3;

  /** A judged pod: the LB IP its packets must leave with, or empty for a pod that opted into nothing. */
  record Sender(Cluster.Pod pod, Optional<String> lbIp) {}

  private final Cluster cluster;
  private final Random random;
  private final int churnServices;
  private final List<Sender> senders = new ArrayList<>();
  private final Map<String, Traffic.Stream> streams = new LinkedHashMap<>();
  private final Duration interval;
  private final List<Traffic.Probe> probes = new ArrayList<>();
  private final List<String> probeFrom = new ArrayList<>();
  private final AtomicLong churnSteps = new AtomicLong();
  /** Per churned service, whether its LB IPs are the moved pair (only the churn thread reads and writes it). */
  private final boolean[] lbIpsMoved;
  private volatile boolean churning;
  private volatile Consumer<String> wrongSource = what -> { };
  private volatile boolean closed;
  private final Thread churner;
  private final Thread prober;

  Workload(Cluster cluster, long seed, int services, Duration interval) {
    this.cluster = cluster;
    this.random = new Random(seed ^ 0x5eedL);
    this.churnServices = Math.max(0, services - 2);
    this.interval = interval;
    this.lbIpsMoved = new boolean[churnServices];
    for (int k = 1; k <= 2; k++) {
      String lb = Addresses.lbIp(k, IpFamily.V4);
      List<Cluster.Pod> pods = new ArrayList<>();
      for (Cluster.Node n : cluster.nodes()) {
        Cluster.Pod p = n.pods().get(k - 1);
        pods.add(p);
        senders.add(new Sender(p, Optional.of(lb)));
      }
      cluster.api().createLoadBalancer(JUDGED_PREFIX + k, "172.30.0." + k, "fd02::" + k,
          List.of(lb, Addresses.lbIp(k, IpFamily.V6)), pods);
      cluster.api().applyEgressService(JUDGED_PREFIX + k, SourceIPBy.LOADBALANCERIP, "", Optional.empty());
    }
    for (Cluster.Node n : cluster.nodes()) {
      senders.add(new Sender(n.pods().get(2), Optional.empty()));
    }
    for (int i = 0; i < churnServices; i++) {
      cluster.api().createLoadBalancer(churnName(i), "172.30.1." + (i + 1), "fd02::1:" + (i + 1),
          churnLbIps(i, false), phantoms(1 + random.nextInt(4)));
      applyChurn(i, Optional.empty());
    }
    churner = new Thread(this::churnLoop, "chaos-churn");
    churner.setDaemon(true);
    prober = new Thread(this::probeLoop, "chaos-prober");
    prober.setDaemon(true);
  }

  static String churnName(int i) {
    return "churn-" + i;
  }

  int churnServices() {
    return churnServices;
  }

  /** Every churned service's name. */
  List<String> churnNames() {
    List<String> out = new ArrayList<>();
    for (int i = 0; i < churnServices; i++) {
      out.add(churnName(i));
    }
    return out;
  }

  /** Every service's name (judged and churned). */
  List<String> allNames() {
    List<String> out = new ArrayList<>(List.of(JUDGED_PREFIX + 1, JUDGED_PREFIX + 2));
    out.addAll(churnNames());
    return out;
  }

  void applyChurn(int i, Optional<String> node) {
    SourceIPBy kind = i % 2 == 0 ? SourceIPBy.LOADBALANCERIP : SourceIPBy.NETWORK;
    cluster.api().applyEgressService(churnName(i), kind, "", node);
  }

  /** Endpoints at addresses of no pod namespace: index 100 and up on a random node each. */
  private List<Cluster.Pod> phantoms(int count) {
    List<Cluster.Pod> out = new ArrayList<>();
    List<Cluster.Node> nodes = cluster.nodes();
    for (int j = 0; j < count; j++) {
      Cluster.Node n = nodes.get(random.nextInt(nodes.size()));
      int index = 100 + random.nextInt(100);
      out.add(new Cluster.Pod("phantom-" + n.name() + "-" + index, n.name(), n.index(), index, null));
    }
    return out;
  }

  /** Starts the streams, the prober and the churn. */
  void start() {
    for (Sender s : senders) {
      streams.put(s.pod().name(), cluster.traffic().stream(s.pod().name(), Addresses.EXTERNAL_V4, interval));
    }
    prober.start();
    churning = true;
    churner.start();
  }

  /** The IPv4 addresses of the judged opted-in pods. */
  java.util.Set<String> judgedIps() {
    java.util.Set<String> out = new java.util.HashSet<>();
    for (Sender s : senders) {
      if (s.lbIp().isPresent()) {
        out.add(s.pod().ip(IpFamily.V4));
      }
    }
    return out;
  }

  List<Sender> senders() {
    return List.copyOf(senders);
  }

  Traffic.Stream stream(String pod) {
    return streams.get(pod);
  }

  /**
   * Told at once when a new-flow probe leaves with a source it must not have (the judge, after the run, counts the
   * violation): the kernels can then be seen as they were when it happened.
   */
  void onWrongSource(Consumer<String> sink) {
    wrongSource = sink;
  }

  /** Pauses (or resumes) the endpoint and EgressService churn; a step under way finishes. */
  void churn(boolean on) {
    churning = on;
  }

  long churnSteps() {
    return churnSteps.get();
  }

  /** New-flow probes so far: (pod, probe). */
  synchronized List<Map.Entry<String, Traffic.Probe>> probes() {
    List<Map.Entry<String, Traffic.Probe>> out = new ArrayList<>();
    for (int i = 0; i < probes.size(); i++) {
      out.add(Map.entry(probeFrom.get(i), probes.get(i)));
    }
    return out;
  }

  private void churnLoop() {
    while (!closed) {
      pause(300 + random.nextInt(500));
      if (!churning || churnServices == 0) {
        continue;
      }
      try {
        churnStep(random.nextInt(churnServices));
        churnSteps.incrementAndGet();
      } catch (RuntimeException e) {
        // the API server refused (a fault of the test's own client is not the agent's): try again later
      }
    }
  }

  /**
   * One change to churned service {@code i}, through the test's own client (which reaches the API server directly,
   * not through the agents' proxy, so the churn goes on while the agents are cut off): new endpoints (half of the
   * steps), the EgressService pinned to a node or freed, deleted or created again, or the Service's LB IPs moved to
   * the other of its two pairs.
   */
  private void churnStep(int i) {
    int what = random.nextInt(10);
    if (what < 5) {
      cluster.api().setEndpoints(churnName(i), phantoms(random.nextInt(5)));
    } else if (what < 7) {
      List<Cluster.Node> nodes = cluster.nodes();
      applyChurn(i, random.nextBoolean() ? Optional.of(nodes.get(random.nextInt(nodes.size())).name())
          : Optional.empty());
    } else if (what < 9) {
      if (cluster.api().client().resources(EgressService.class).inNamespace(ApiServer.NAMESPACE)
          .withName(churnName(i)).get() == null) {
        applyChurn(i, Optional.empty());
      } else {
        cluster.api().deleteEgressService(churnName(i));
      }
    } else {
      boolean moved = lbIpsMoved[i];
      List<String> ips = churnLbIps(i, !moved);
      cluster.api().client().services().inNamespace(ApiServer.NAMESPACE).withName(churnName(i)).editStatus(svc -> {
        svc.getStatus().getLoadBalancer().setIngress(ips.stream()
            .map(ip -> new LoadBalancerIngressBuilder().withIp(ip).build()).toList());
        return svc;
      });
      lbIpsMoved[i] = !moved;
    }
  }

  /** Churned service {@code i}'s LB IPs (v4, v6): its first pair, or the other one it moves to and back from. */
  private static List<String> churnLbIps(int i, boolean moved) {
    return moved ? List.of("5.5.6." + (10 + i), "2001:db8:6::" + (10 + i))
        : List.of(Addresses.lbIp(10 + i, IpFamily.V4), Addresses.lbIp(10 + i, IpFamily.V6));
  }

  private void probeLoop() {
    int k = 0;
    while (!closed) {
      Sender s = senders.get(k++ % senders.size());
      Traffic.Probe p = cluster.traffic().udp(s.pod().name(), Addresses.EXTERNAL_V4);
      String expected = s.lbIp().orElseGet(() -> cluster.node(s.pod().node()).uplink(1).nodeIp(IpFamily.V4));
      p.seen().stream().filter(x -> !x.source().equals(expected)).findFirst().ifPresent(x -> wrongSource.accept(
          "new-flow probe of " + s.pod().name() + " left with " + x.source() + " at " + x.where() + " (expected "
          + expected + ")"));
      synchronized (this) {
        if (probes.size() < 20_000) {
          probes.add(p);
          probeFrom.add(s.pod().name());
        }
      }
      pause(200);
    }
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
    closed = true;
    churning = false;
    try {
      churner.join(5000);
      prober.join(5000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    streams.values().forEach(Traffic.Stream::close);
  }
}
