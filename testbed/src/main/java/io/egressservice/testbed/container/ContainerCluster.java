package io.egressservice.testbed.container;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.egressservice.ip.IpFamily;
import io.egressservice.testbed.Addresses;
import io.egressservice.testbed.Cluster;
import io.egressservice.testbed.ClusterBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;

/**
 * The namespace {@link Cluster} with every node's agent and the allocator run as users run them: the image, started
 * by podman from the DaemonSet's and the Deployment's pod templates exactly as the chart or kustomize rendered them
 * ({@link PodSpecs} says what the control plane and the kubelet add), against the API server over HTTPS with the
 * mounted ServiceAccount token ({@link ApiFront}), probed by a kubelet ({@link Kubelet}).
 *
 * <p>The node agents' pods are hostNetwork pods in their node's namespace; each allocator replica gets a pod network
 * namespace of its own on the node network (192.168.50.3, .4, ...: what a pod IP routed to the nodes is), probed from
 * the control plane's namespace. The rendered Namespace, ServiceAccounts, Secrets, ConfigMaps, DaemonSet and
 * Deployment are written to the API first; a DaemonSet pod runs on every node its nodeSelector matches (the Nodes
 * carry {@code kubernetes.io/os=linux}, as a kubelet registers them).
 *
 * <p>Cleanup: {@link #close()} removes the pods (SIGKILL) and the cluster; if the JVM dies, the cluster's watchdog
 * kills the containers' processes (their pids are in its list) and deletes the namespaces, the allocators' too.
 */
public final class ContainerCluster implements AutoCloseable {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Duration READY = Duration.ofSeconds(150);
  /** Pods start and stop in parallel, as on nodes of their own (the common pool runs one task at a time on 2 cores). */
  private static final java.util.concurrent.ExecutorService POOL = java.util.concurrent.Executors.newCachedThreadPool(r -> {
    Thread t = new Thread(r, "container-cluster");
    t.setDaemon(true);
    return t;
  });
  private static final Set<String> INSTALLED_KINDS = Set.of("Namespace", "ServiceAccount", "Secret", "ConfigMap",
      "DaemonSet", "Deployment");

  private final Podman podman;
  private final Cluster cluster;
  private final ApiFront front;
  private final Path dir;
  private final Path serviceAccount;
  private final Map<String, Path> secrets = new LinkedHashMap<>();
  private final Map<String, Kubelet> agents = java.util.Collections.synchronizedMap(new LinkedHashMap<>());
  private final List<Kubelet> allocators = new java.util.concurrent.CopyOnWriteArrayList<>();
  private final List<String> allocatorNetns = new ArrayList<>();
  private ObjectNode daemonSet;
  private Optional<ObjectNode> deployment;
  private boolean closed;

  private ContainerCluster(Podman podman, Cluster cluster, ApiFront front, Path dir, Path serviceAccount) {
    this.podman = podman;
    this.cluster = cluster;
    this.front = front;
    this.dir = dir;
    this.serviceAccount = serviceAccount;
  }

  /**
   * Builds {@code nodes} (without agent processes), installs {@code rendered} (the chart's or kustomize's objects) and
   * runs its DaemonSet's and Deployment's pods from image archive {@code image}; waits until every pod is ready.
   */
  public static ContainerCluster start(ClusterBuilder nodes, List<JsonNode> rendered, Path image) {
    Podman podman = Podman.create();
    ObjectNode ds = one(rendered, "DaemonSet").orElseThrow(() -> new IllegalArgumentException("no DaemonSet rendered"));
    ContainerImage.load(podman, image, ds.path("spec").path("template").path("spec").path("containers").get(0)
        .path("image").asText());
    Cluster cluster = nodes.withoutAgents().start();
    ContainerCluster c = null;
    try {
      Path dir = Files.createDirectories(cluster.dir().resolve("pods"));
      ApiFront front = new ApiFront(dir, cluster.traffic().thread("lan"), Addresses.controlPlaneIp(IpFamily.V4),
          cluster.api().client().getMasterUrl().getPort());
      c = new ContainerCluster(podman, cluster, front, dir, Files.createDirectories(dir.resolve("serviceaccount")));
      c.install(rendered, ds);
      return c;
    } catch (IOException e) {
      close(c, cluster);
      throw new UncheckedIOException(e);
    } catch (RuntimeException | Error e) {
      close(c, cluster);
      throw e;
    }
  }

  private static void close(ContainerCluster c, Cluster cluster) {
    if (c != null) {
      c.close();
    } else {
      cluster.close();
    }
  }

  private void install(List<JsonNode> rendered, ObjectNode ds) throws IOException {
    KubernetesClient client = cluster.api().client();
    for (Cluster.Node n : cluster.nodes()) {
      client.nodes().withName(n.name()).edit(node -> {
        node.getMetadata().getLabels().put("kubernetes.io/os", "linux");
        return node;
      });
    }
    for (JsonNode o : rendered) {
      if (INSTALLED_KINDS.contains(o.path("kind").asText())) {
        client.resource(JSON.writeValueAsString(o)).create();
      }
      if (o.path("kind").asText().equals("Secret")) {
        secrets.put(o.path("metadata").path("name").asText(), writeSecret(o));
      }
    }
    String namespace = ds.path("metadata").path("namespace").asText();
    Files.writeString(serviceAccount.resolve("token"), front.token());
    Files.copy(front.caCertificate(), serviceAccount.resolve("ca.crt"));
    Files.writeString(serviceAccount.resolve("namespace"), namespace);
    daemonSet = ds;
    deployment = one(rendered, "Deployment");
    Map<String, CompletableFuture<Kubelet>> playing = new LinkedHashMap<>();
    for (Cluster.Node n : cluster.nodes()) {
      if (selects(ds, n)) {
        playing.put(n.name(), CompletableFuture.supplyAsync(() -> play(ds, n, podName(ds), UUID.randomUUID().toString()), POOL));
      }
    }
    List<CompletableFuture<Kubelet>> allocating = new ArrayList<>();
    if (deployment.isPresent()) {
      ObjectNode d = deployment.get();
      for (int r = 1; r <= d.path("spec").path("replicas").asInt(1); r++) {
        allocatorNetwork(r);
        int replica = r;
        allocating.add(CompletableFuture.supplyAsync(() -> allocator(d, replica), POOL));
      }
    }
    // every pod is kept as it comes, so that close() removes the ones that started if another failed
    List<Kubelet> started = new ArrayList<>();
    RuntimeException failed = null;
    for (var e : playing.entrySet()) {
      try {
        agents.put(e.getKey(), e.getValue().join());
        started.add(agents.get(e.getKey()));
      } catch (java.util.concurrent.CompletionException ex) {
        failed = failed == null ? unwrap(ex) : failed;
      }
    }
    for (var f : allocating) {
      try {
        allocators.add(f.join());
        started.add(allocators.get(allocators.size() - 1));
      } catch (java.util.concurrent.CompletionException ex) {
        failed = failed == null ? unwrap(ex) : failed;
      }
    }
    if (failed != null) {
      throw failed;
    }
    writePids();
    awaitReady(started);
  }

  /**
   * What in {@code rendered}'s DaemonSet and Deployment pod templates this testbed's control plane and kubelet could
   * not run (a fieldRef they do not fill, a Secret volume whose Secret is neither rendered nor in {@code
   * installedSecrets}, a probe on a port the container does not name, a hostPort): empty when every pod can run.
   */
  public static List<String> unrunnable(List<JsonNode> rendered, Set<String> installedSecrets) {
    Map<String, Path> secrets = new LinkedHashMap<>();
    installedSecrets.forEach(n -> secrets.put(n, Path.of("/nonexistent")));
    rendered.stream().filter(o -> o.path("kind").asText().equals("Secret"))
        .forEach(o -> secrets.put(o.path("metadata").path("name").asText(), Path.of("/nonexistent")));
    List<String> problems = new ArrayList<>();
    for (String kind : List.of("DaemonSet", "Deployment")) {
      for (JsonNode w : rendered) {
        if (!w.path("kind").asText().equals(kind)) {
          continue;
        }
        JsonNode template = w.path("spec").path("template");
        try {
          PodSpecs.pod(template, new PodSpecs.Placement("pod", "ns", "uid", "node", "192.0.2.1", "192.0.2.1",
              "192.0.2.2", ApiFront.PORT, Path.of("/nonexistent"), secrets));
          for (JsonNode c : template.path("spec").path("containers")) {
            for (String probe : List.of("startupProbe", "livenessProbe", "readinessProbe")) {
              Kubelet.Probe.of(probe, c);
            }
          }
        } catch (IllegalArgumentException e) {
          problems.add(kind + " " + w.path("metadata").path("name").asText() + ": " + e.getMessage());
        }
      }
    }
    return problems;
  }

  // ---- the surface a test uses ------------------------------------------------------------------------

  /** The namespace cluster underneath: nodes, pods, traffic, the API's own client. */
  public Cluster cluster() {
    return cluster;
  }

  /** The pod of {@code node}'s agent. */
  public Kubelet agent(String node) {
    Kubelet k = agents.get(node);
    if (k == null) {
      throw new IllegalArgumentException("no agent pod on " + node + " (pods on: " + agents.keySet() + ")");
    }
    return k;
  }

  /** The allocator Deployment's pods. */
  public List<Kubelet> allocators() {
    return List.copyOf(allocators);
  }

  /** The API server's front (connections refused for a wrong token). */
  public ApiFront apiFront() {
    return front;
  }

  /**
   * {@code helm upgrade} to {@code rendered}: the DaemonSet and the Deployment replaced in the API (the probe key's
   * Secret is kept, as the chart's lookup keeps it on an upgrade), then their rolling updates. The DaemonSet's, one
   * node at a time: the old pod deleted (SIGTERM, the grace period), the new one started and awaited ready before the
   * next node. The Deployment's, one replica at a time, each new pod in the old one's pod network. Returns how long
   * each old pod took to stop.
   */
  public Map<String, Duration> upgrade(List<JsonNode> rendered) {
    daemonSet = one(rendered, "DaemonSet").orElseThrow(() -> new IllegalArgumentException("no DaemonSet rendered"));
    deployment = one(rendered, "Deployment");
    replace(daemonSet);
    deployment.ifPresent(this::replace);
    // the DaemonSet's and the Deployment's controllers roll their pods independently, at the same time
    CompletableFuture<Map<String, Duration>> allocatorStops = CompletableFuture.supplyAsync(this::rollAllocators, POOL);
    Map<String, Duration> stops = new LinkedHashMap<>();
    for (Cluster.Node n : cluster.nodes()) {
      Kubelet old = agents.remove(n.name());
      if (old != null) {
        stops.put(old.pod() + " on " + n.name(), old.stop());
        Kubelet k = play(daemonSet, n, podName(daemonSet), UUID.randomUUID().toString());
        agents.put(n.name(), k);
        writePids();
        k.awaitReady(READY);
      }
    }
    try {
      stops.putAll(allocatorStops.join());
    } catch (java.util.concurrent.CompletionException e) {
      throw unwrap(e);
    }
    return stops;
  }

  private Map<String, Duration> rollAllocators() {
    Map<String, Duration> stops = new LinkedHashMap<>();
    for (int r = 0; r < allocators.size() && deployment.isPresent(); r++) {
      Kubelet old = allocators.get(r);
      stops.put(old.pod(), old.stop());
      Kubelet k = allocator(deployment.get(), r + 1);
      allocators.set(r, k);
      writePids();
      k.awaitReady(READY);
    }
    return stops;
  }

  private void replace(JsonNode workload) {
    try {
      cluster.api().client().resource(JSON.writeValueAsString(workload)).update();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** {@code node} loses power: its agent's container is killed (SIGKILL), then every link of the node goes down. */
  public void powerOff(String node) {
    Kubelet k = agents.get(node);
    if (k != null) {
      k.kill();
    }
    cluster.node(node).powerOff();
  }

  /** {@code node} boots again: links and routes back, the kubelet starts the agent's pod again (a new container). */
  public void powerOn(String node) {
    Cluster.Node n = cluster.node(node);
    n.powerOn();
    if (agents.containsKey(node)) {
      Kubelet k = play(daemonSet, n, podName(daemonSet), UUID.randomUUID().toString());
      agents.put(node, k);
      writePids();
      k.awaitReady(READY);
    }
  }

  /**
   * {@code helm uninstall}: the DaemonSet and the Deployment deleted from the API, then every pod of theirs deleted
   * at once as the garbage collector does (SIGTERM, the grace period). Returns how long each pod took to stop.
   */
  public Map<String, Duration> uninstall() {
    KubernetesClient client = cluster.api().client();
    String ns = daemonSet.path("metadata").path("namespace").asText();
    client.apps().daemonSets().inNamespace(ns).withName(daemonSet.path("metadata").path("name").asText()).delete();
    deployment.ifPresent(d -> client.apps().deployments().inNamespace(ns).withName(d.path("metadata").path("name")
        .asText()).delete());
    Map<String, CompletableFuture<Duration>> stopping = new LinkedHashMap<>();
    agents.forEach((node, k) -> stopping.put(k.pod() + " on " + node, CompletableFuture.supplyAsync(k::stop, POOL)));
    allocators.forEach(k -> stopping.put(k.pod(), CompletableFuture.supplyAsync(k::stop, POOL)));
    Map<String, Duration> out = new LinkedHashMap<>();
    stopping.forEach((pod, f) -> out.put(pod, f.join()));
    agents.clear();
    allocators.clear();
    return out;
  }

  /** Removes every pod (SIGKILL), the allocators' namespaces and the cluster. Idempotent. */
  @Override
  public void close() {
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
    }
    List<CompletableFuture<Void>> closing = new ArrayList<>();
    agents.values().forEach(k -> closing.add(CompletableFuture.runAsync(k::close, POOL)));
    allocators.forEach(k -> closing.add(CompletableFuture.runAsync(k::close, POOL)));
    closing.forEach(CompletableFuture::join);
    front.close();
    for (String netns : allocatorNetns) {
      try {
        ip("netns", "del", netns);
      } catch (RuntimeException e) {
        // already gone
      }
    }
    cluster.close();
  }

  // ---- the kubelet's and the controllers' part --------------------------------------------------------------

  private Kubelet play(ObjectNode workload, Cluster.Node n, String podName, String uid) {
    return new Kubelet(podman, workload.path("spec").path("template"),
        placement(workload, podName, uid, n.name(), n.ip(IpFamily.V4), n.ip(IpFamily.V4)), n.netns().name(),
        Optional.empty(), dir);
  }

  /** Replica {@code r} of the allocator: in its own pod network, probed from the control plane's namespace. */
  private Kubelet allocator(ObjectNode d, int r) {
    return new Kubelet(podman, d.path("spec").path("template"), placement(d, podName(d), UUID.randomUUID().toString(),
        "control-plane", Addresses.controlPlaneIp(IpFamily.V4), allocatorIp(r)), cluster.netns("lan").name(),
        Optional.of(allocatorNetns.get(r - 1)), dir);
  }

  private PodSpecs.Placement placement(JsonNode workload, String podName, String uid, String node, String hostIp,
      String podIp) {
    return new PodSpecs.Placement(podName, workload.path("metadata").path("namespace").asText(), uid, node, hostIp,
        podIp, front.host(), front.port(), serviceAccount, secrets);
  }

  /** Whether the DaemonSet's nodeSelector selects {@code node} (matchLabels only: what the chart renders). */
  private boolean selects(JsonNode ds, Cluster.Node node) {
    Map<String, String> labels = cluster.api().labels(node.name());
    var it = ds.path("spec").path("template").path("spec").path("nodeSelector").fields();
    while (it.hasNext()) {
      var e = it.next();
      if (!e.getValue().asText().equals(labels.get(e.getKey()))) {
        return false;
      }
    }
    return true;
  }

  /** A Secret's data as the kubelet writes a secret volume: one file per key, owner-readable only (mode 0400). */
  private Path writeSecret(JsonNode secret) throws IOException {
    Path d = Files.createDirectories(dir.resolve("secret-" + secret.path("metadata").path("name").asText()));
    var it = secret.path("data").fields();
    while (it.hasNext()) {
      var e = it.next();
      Path f = d.resolve(e.getKey());
      Files.write(f, Base64.getDecoder().decode(e.getValue().asText()));
      Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("r--------"));
    }
    var s = secret.path("stringData").fields();
    while (s.hasNext()) {
      var e = s.next();
      Path f = d.resolve(e.getKey());
      Files.writeString(f, e.getValue().asText());
      Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("r--------"));
    }
    return d;
  }

  /** Replica {@code r}'s pod network: a namespace on the node network's bridge, with an address of its own. */
  private String allocatorNetwork(int r) {
    String name = cluster.namespacePrefix() + "alloc" + r;
    appendLine(cluster.dir().resolve("netns"), name); // the watchdog's list: deleted even if this JVM dies
    ip("netns", "add", name);
    allocatorNetns.add(name); // from here on, close() deletes it
    cluster.netns("lan").ip("link add alloc" + r + " type veth peer name eth0 netns " + name,
        "link set alloc" + r + " master br0", "link set alloc" + r + " up");
    ip("-n", name, "-batch", "-", "link set lo up\naddr add " + allocatorIp(r) + "/24 dev eth0\nlink set eth0 up\n");
    return name;
  }

  /** {@code ip ARGS} in this process' namespace, the last argument as its input when {@code -batch -} is given. */
  private static void ip(String... args) {
    List<String> command = new ArrayList<>(List.of("ip"));
    boolean batch = List.of(args).contains("-batch");
    command.addAll(List.of(args).subList(0, batch ? args.length - 1 : args.length));
    try {
      Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
      if (batch) {
        p.getOutputStream().write(args[args.length - 1].getBytes(java.nio.charset.StandardCharsets.UTF_8));
      }
      p.getOutputStream().close();
      String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
      if (!p.waitFor(30, java.util.concurrent.TimeUnit.SECONDS) || p.exitValue() != 0) {
        throw new IllegalStateException(String.join(" ", command) + " failed: " + out.trim());
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private static String allocatorIp(int r) {
    return "192.168.50." + (2 + r);
  }

  /** Tells the cluster's watchdog the containers' pids (they are killed if this JVM dies). */
  private synchronized void writePids() {
    StringBuilder pids = new StringBuilder();
    List<Kubelet> all = new ArrayList<>(agents.values());
    all.addAll(allocators);
    for (Kubelet k : all) {
      k.pid().ifPresent(p -> pids.append(p).append('\n'));
    }
    try {
      Files.writeString(cluster.dir().resolve("pids"), pids.toString());
    } catch (IOException e) {
      // the watchdog misses these; close() still removes them
    }
  }

  private static void awaitReady(List<Kubelet> pods) {
    List<CompletableFuture<Void>> waits = new ArrayList<>();
    pods.forEach(k -> waits.add(CompletableFuture.runAsync(() -> k.awaitReady(READY), POOL)));
    for (CompletableFuture<Void> w : waits) {
      try {
        w.join();
      } catch (java.util.concurrent.CompletionException e) {
        throw unwrap(e);
      }
    }
  }

  private static RuntimeException unwrap(java.util.concurrent.CompletionException e) {
    return e.getCause() instanceof RuntimeException r ? r : e;
  }

  private static String podName(JsonNode workload) {
    String alphabet = "bcdfghjklmnpqrstvwxz2456789"; // the API server's generateName alphabet
    SecureRandom random = new SecureRandom();
    StringBuilder sb = new StringBuilder(workload.path("metadata").path("name").asText()).append('-');
    for (int i = 0; i < 5; i++) {
      sb.append(alphabet.charAt(random.nextInt(alphabet.length())));
    }
    return sb.toString();
  }

  private static Optional<ObjectNode> one(List<JsonNode> rendered, String kind) {
    return rendered.stream().filter(o -> o.path("kind").asText().equals(kind)).map(o -> (ObjectNode) o.deepCopy())
        .findFirst();
  }

  private static void appendLine(Path file, String line) {
    try {
      Files.writeString(file, line + "\n", StandardOpenOption.APPEND);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
