package io.egressservice.bench;

import io.egressservice.allocator.Allocator;
import io.egressservice.allocator.AllocatorConfig;
import io.egressservice.informers.ClusterInformers;
import io.egressservice.objects.EgressServices;
import io.egressservice.testbed.VersionEndpoint;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServiceBuilder;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointBuilder;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSliceBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.IntFunction;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceSpec;

/**
 * The allocator's CPU against fabric8's mock API server in this JVM (no kernel, no root): the thread CPU time of its
 * worker thread (where every pass runs), which holds on a busy machine where wall time does not. Uses only the
 * allocator's public API, so the same file measures an older build. Two scenarios:
 *
 * <ul>
 *   <li>{@code unrelated [services=10000] [seconds=20] [rate=10]}: 10 opted-in LoadBalancerIP services beside N
 *       Services with one EndpointSlice each that no EgressService names; once converged, {@code rate} updates a
 *       second of those slices (one endpoint address replaced): allocator CPU in % of a core, passes run;</li>
 *   <li>{@code opted [counts=100,1000,5000] [updates=40]}: N opted-in services (one slice each, endpoints on one of 20
 *       nodes, status.host already right); once converged, single endpoint updates of one service, each waited for
 *       (its pass done, then 300 ms): allocator CPU per update.</li>
 * </ul>
 * Periodic resyncs are off (1 h), so only the events count. bench/allocator.sh runs both with the DaemonSet's JIT flags.
 *
 * <p>The mock API server finds an object by scanning all it holds, so creating 20,000 through it takes many minutes.
 * Only the objects the bench updates ({@value #THROUGH_API} services' worth) are created through the API; the rest
 * are put straight into the informers' caches, before the allocator registers its handlers (fabric8 then hands them
 * to its handlers as additions, as on a start). The mock's watches do not relist during a run, so they stay.
 */
public final class AllocatorBench {
  private static final String NS = "bench";
  private static final int NODES = 20;
  private static final String IDENTITY = "bench";
  private static final int THROUGH_API = 200;
  /** Held, so the level sticks: the mock server logs every request. */
  private static final java.util.logging.Logger MOCK_LOG = java.util.logging.Logger.getLogger("io.fabric8");

  private final KubernetesMockServer server;
  private final KubernetesClient client;
  private final Random random = new Random(42);
  private final ClusterInformers informers;
  private int nextAddress;
  private int slicesCreated;

  private AllocatorBench() throws InterruptedException {
    server = new KubernetesMockServer(new Context(), new MockWebServer(), new HashMap<>(),
        new VersionEndpoint(new KubernetesCrudDispatcher()), false);
    server.init();
    client = server.createClient();
    informers = ClusterInformers.create(client, Duration.ofHours(1));
    informers.start();
    long deadline = System.nanoTime() + Duration.ofMinutes(1).toNanos();
    while (!informers.hasSynced() && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
  }

  public static void main(String[] args) throws Exception {
    MOCK_LOG.setLevel(java.util.logging.Level.WARNING);
    String mode = args.length > 0 ? args[0] : "unrelated";
    System.out.printf(Locale.ROOT, "allocator bench %s %s; java %s, flags %s%n", mode,
        String.join(" ", Arrays.copyOfRange(args, Math.min(1, args.length), args.length)),
        System.getProperty("java.version"), ManagementFactory.getRuntimeMXBean().getInputArguments());
    if (mode.equals("unrelated")) {
      int services = args.length > 1 ? Integer.parseInt(args[1]) : 10_000;
      int seconds = args.length > 2 ? Integer.parseInt(args[2]) : 20;
      int rate = args.length > 3 ? Integer.parseInt(args[3]) : 10;
      AllocatorBench b = new AllocatorBench();
      try {
        b.unrelated(services, seconds, rate);
      } finally {
        b.close();
      }
    } else if (mode.equals("opted")) {
      String counts = args.length > 1 ? args[1] : "100,1000,5000";
      int updates = args.length > 2 ? Integer.parseInt(args[2]) : 40;
      System.out.println("| EgressServices | updates | allocator CPU ms per update (mean) | median | passes |");
      System.out.println("|---:|---:|---:|---:|---:|");
      for (String c : counts.split(",")) {
        AllocatorBench b = new AllocatorBench();
        try {
          b.opted(Integer.parseInt(c.trim()), updates);
        } finally {
          b.close();
        }
      }
    } else {
      throw new IllegalArgumentException("mode: unrelated or opted, not " + mode);
    }
  }

  private void close() {
    informers.close();
    client.close();
    server.destroy();
  }

  private void unrelated(int services, int seconds, int rate) throws Exception {
    nodes();
    long t0 = System.nanoTime();
    createAll(10, i -> "opted-" + i, true);
    createAll(services, i -> "other-" + i, false);
    int pool = Math.min(services, THROUGH_API);
    System.out.printf(Locale.ROOT, "created 10 opted-in and %d other Services with a slice each in %.1f s%n", services,
        (System.nanoTime() - t0) / 1e9);
    try (Allocator a = allocator()) {
      converge(a);
      Thread worker = worker();
      long cpu0 = cpu(worker);
      long passes0 = a.passes();
      long start = System.nanoTime();
      long period = 1_000_000_000L / rate;
      int updates = 0;
      for (long next = start; next < start + seconds * 1_000_000_000L; next += period) {
        long wait = next - System.nanoTime();
        if (wait > 0) {
          Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
        }
        int i = random.nextInt(pool);
        client.discovery().v1().endpointSlices().resource(slice("other-" + i, i % NODES)).update();
        updates++;
      }
      Thread.sleep(500); // the last events' passes
      double wall = (System.nanoTime() - start) / 1e9;
      long cpu = cpu(worker) - cpu0;
      System.out.printf(Locale.ROOT, "| %d unrelated Services+slices, %d slice updates in %.1f s | allocator worker CPU"
          + " %.0f ms = %.1f %% of a core | passes %d |%n", services, updates, wall, cpu / 1e6, 100 * cpu / 1e9 / wall,
          a.passes() - passes0);
    }
  }

  private void opted(int services, int updates) throws Exception {
    nodes();
    long t0 = System.nanoTime();
    createAll(services, i -> "svc-" + i, true);
    double created = (System.nanoTime() - t0) / 1e9;
    try (Allocator a = allocator()) {
      converge(a);
      Thread worker = worker();
      long[] perUpdate = new long[updates];
      long passes0 = a.passes();
      for (int u = 0; u < updates; u++) {
        int i = random.nextInt(Math.min(services, THROUGH_API));
        long passes = a.passes();
        long cpu0 = cpu(worker);
        client.discovery().v1().endpointSlices().resource(slice("svc-" + i, i % NODES)).update();
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (a.passes() == passes && System.nanoTime() < deadline) {
          Thread.sleep(2);
        }
        Thread.sleep(300); // the pass's writes, if any, and the minimum spacing of passes
        perUpdate[u] = cpu(worker) - cpu0;
      }
      long[] sorted = perUpdate.clone();
      Arrays.sort(sorted);
      System.out.printf(Locale.ROOT, "| %d | %d | %.2f | %.2f | %d |   (objects created in %.1f s)%n", services, updates,
          Arrays.stream(perUpdate).average().orElse(0) / 1e6, sorted[updates / 2] / 1e6, a.passes() - passes0, created);
    }
  }

  private Allocator allocator() {
    AllocatorConfig config = new AllocatorConfig(AllocatorConfig.DEFAULT_LEASE_NAME, Duration.ofSeconds(15),
        Duration.ofSeconds(10), Duration.ofSeconds(2), Duration.ofHours(1));
    Allocator a = new Allocator(client, informers, config, IDENTITY);
    a.start();
    return a;
  }

  /** Leads, and waits until passes and writes have stopped for 2 s (bounded: 10 minutes). */
  private static void converge(Allocator a) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofMinutes(10).toNanos();
    while (!a.synced() && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    long t0 = System.nanoTime();
    a.startLeading();
    long quietSince = System.nanoTime();
    long seen = -1;
    while (System.nanoTime() < deadline) {
      long now = a.passes() * 1_000_003 + a.statusWrites() * 1_009 + a.labelPatches();
      if (now != seen || a.passes() == 0) {
        seen = now;
        quietSince = System.nanoTime();
      } else if (System.nanoTime() - quietSince > 2_000_000_000L) {
        break;
      }
      Thread.sleep(50);
    }
    System.out.printf(Locale.ROOT, "converged in %.1f s: %d passes, %d status writes, %d label patches%n",
        (System.nanoTime() - t0) / 1e9 - 2, a.passes(), a.statusWrites(), a.labelPatches());
  }

  private static Thread worker() {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.getName().equals("egress-allocator-" + IDENTITY)).findFirst()
        .orElseThrow(() -> new IllegalStateException("no allocator worker thread"));
  }

  private static long cpu(Thread t) {
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    return threads.getThreadCpuTime(t.getId());
  }

  private void nodes() {
    for (int n = 0; n < NODES; n++) {
      client.nodes().resource(new NodeBuilder().withNewMetadata().withName(node(n)).endMetadata()
          .withNewSpec().withPodCIDR("10." + (128 + n / 64) + "." + (n % 64 * 4) + ".0/22")
            .withPodCIDRs("10." + (128 + n / 64) + "." + (n % 64 * 4) + ".0/22").endSpec()
          .withNewStatus().addNewAddress().withType("InternalIP").withAddress("192.168.1." + (10 + n)).endAddress()
            .addNewCondition().withType("Ready").withStatus("True").endCondition().endStatus()
          .build()).create();
    }
  }

  /** The informer's cache (fabric8's implementation class: nothing public adds to it). */
  @SuppressWarnings("unchecked")
  private static <T extends io.fabric8.kubernetes.api.model.HasMetadata>
      io.fabric8.kubernetes.client.informers.impl.cache.CacheImpl<T> cache(
          io.fabric8.kubernetes.client.informers.SharedIndexInformer<T> informer) {
    return (io.fabric8.kubernetes.client.informers.impl.cache.CacheImpl<T>) informer.getIndexer();
  }

  private static String node(int n) {
    return String.format(Locale.ROOT, "node-%02d", n);
  }

  /**
   * Services 0..count-1 named by {@code name}, one slice each with 5 endpoints on node i % 20: the first
   * {@value #THROUGH_API} through the API (8 threads), the others into the caches.
   */
  private void createAll(int count, IntFunction<String> name, boolean optIn) throws Exception {
    for (int i = THROUGH_API; i < count; i++) {
      String n = name.apply(i);
      if (optIn) {
        cache(informers.egressServices()).put(EgressServices.of(NS, n,
            EgressServiceSpec.SourceIPBy.LOADBALANCERIP, "", node(i % NODES)));
      }
      cache(informers.services()).put(service(n, i, optIn));
      cache(informers.endpointSlices()).put(slice(n, i % NODES));
    }
    int viaApi = Math.min(count, THROUGH_API);
    ExecutorService pool = Executors.newFixedThreadPool(8);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < 8; t++) {
        int first = t;
        done.add(pool.submit(() -> {
          for (int i = first; i < viaApi; i += 8) {
            String n = name.apply(i);
            if (optIn) {
              client.resources(EgressService.class).resource(EgressServices.of(NS, n,
                  EgressServiceSpec.SourceIPBy.LOADBALANCERIP, "", node(i % NODES))).create();
            }
            client.services().resource(service(n, i, optIn)).create();
            EndpointSlice s;
            synchronized (this) {
              s = slice(n, i % NODES);
            }
            client.discovery().v1().endpointSlices().resource(s).create();
          }
          return null;
        }));
      }
      for (Future<?> f : done) {
        f.get();
      }
      // the informers have seen every object created through the API
      long deadline = System.nanoTime() + Duration.ofMinutes(1).toNanos();
      slicesCreated += count;
      while (informers.endpointSlices().getStore().list().size() < slicesCreated
          && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
    } finally {
      pool.shutdown();
    }
  }

  private static Service service(String name, int i, boolean loadBalancer) {
    ServiceBuilder b = new ServiceBuilder()
        .withNewMetadata().withName(name).withNamespace(NS).endMetadata()
        .withNewSpec().withType(loadBalancer ? "LoadBalancer" : "ClusterIP")
          .withClusterIP("172.30." + (i >> 8 & 255) + "." + (i & 255)).addToSelector("app", name).endSpec();
    if (loadBalancer) {
      b.withNewStatus().withNewLoadBalancer().addNewIngress().withIp("5.5." + (i >> 8 & 255) + "." + (i & 255))
          .endIngress().endLoadBalancer().endStatus();
    }
    return b.build();
  }

  /** The service's slice: 5 fresh pod addresses on {@code node}. */
  private EndpointSlice slice(String service, int node) {
    List<io.fabric8.kubernetes.api.model.discovery.v1.Endpoint> endpoints = new ArrayList<>();
    for (int k = 0; k < 5; k++) {
      int a = nextAddress++ % 1000;
      endpoints.add(new EndpointBuilder()
          .withAddresses("10." + (128 + node / 64) + "." + (node % 64 * 4 + a / 250) + "." + (1 + a % 250))
          .withNodeName(node(node)).build());
    }
    return new EndpointSliceBuilder()
        .withNewMetadata().withName(service + "-1").withNamespace(NS)
          .addToLabels("kubernetes.io/service-name", service)
          .addToLabels("endpointslice.kubernetes.io/managed-by", "endpointslice-controller.k8s.io").endMetadata()
        .withAddressType("IPv4").withEndpoints(endpoints).build();
  }
}
