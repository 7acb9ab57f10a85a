package io.egressservice.testbed;

import io.egressservice.ip.IpFamily;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A Kubernetes cluster made of network namespaces, with the real agent process on every node: the one place for
 * multi-node behaviour (steering, host moves, failover, restarts) in tests, benchmarks and the demo.
 *
 * <pre>
 *                   lan (bridge br0, node network 192.168.50.0/24, fd00:50::/64)
 *        ┌──────────────────────────┼─────────────────────────────┐
 *   node-a .11                 node-b .12                     node-c .13      eth0 of each node
 *    ├ p1 ─ pod-a1 10.128.1.5   ├ p1 ─ pod-b1 10.128.2.5       ├ p1 ─ pod-c1 10.128.3.5
 *    │                          ├ p2 ─ pod-b2 10.128.2.6       │
 *    ├ up1 ─ ext-a1 (main)      ├ up1 ─ ext-b1 (main)          ├ up1 ─ ext-c1 (main)
 *    └ up2 ─ ext-a2 (table 100) │                              └ up2 ─ ext-c2 (table 100)
 *          every ext-* owns the external host 203.0.113.10 / 2001:db8:113::10 and links to the client
 *   client 198.51.100.100 / 2001:db8:100::100: one link to every ext-*, reaches the LB IPs through ext-a1
 * </pre>
 *
 * <p>That is {@link #standard()}; {@link #builder()} makes any number of nodes, uplinks and pods (addresses in
 * {@link Addresses}). Each node is wired as a CNI would do it: per-node pod CIDR, a veth and a /32 (/128) route per
 * pod, routes to the other nodes' pod CIDRs via their node IPs over the node network, and a masquerade of pod
 * traffic that leaves the cluster CIDR in an nft table of its own ({@code inet esa_testbed_cni}, priority srcnat,
 * as Flannel's or Calico's natOutgoing). The main table leaves by uplink 1, table 100 by uplink 2. Reverse-path
 * filtering on the nodes is loose for every interface, including the ones the agent creates ({@code
 * conf.default.rp_filter=2}, {@code conf.all.rp_filter=0}: systemd's default; {@link ClusterBuilder#nodeRpFilter} makes
 * it strict), off elsewhere; IPv6 DAD is off. The agents' logs are in {@link #dir()}.
 *
 * <p>Every external router owns the same external address, so "which uplink" is "which namespace answered"; its
 * servers ({@link Traffic}) record the source they saw. Pods run the same servers on their own addresses.
 *
 * <p>The Kubernetes API is fabric8's mock server in CRUD mode ({@link ApiServer}) with one Node per node (Ready,
 * InternalIPs and pod CIDRs of both families, label {@code kubernetes.io/hostname}) and one Pod per pod. Every
 * node runs the real agent process ({@link AgentProcess}: {@code run --node-name N --netns <node> --kubeconfig F
 * --metrics-port P}, allocator on, so the agents elect a leader among themselves and it writes {@code status.host}).
 * Each agent's /healthz also listens inside its node's namespace on port 9464 (as a hostNetwork pod's port is on
 * the node's addresses), and the allocator probes it from the lan namespace, which has the control plane's address
 * on the bridge ({@link Addresses#controlPlaneIp}): a powered-off node does not answer, a restarting agent's node
 * refuses the connection.
 *
 * <p>Use:
 * <pre>{@code
 * try (Cluster c = Cluster.standard().agentArgs("--rule-mode", "mark").start()) {
 *   c.api().createLoadBalancer("web", "172.30.0.10", "fd02::10", List.of("5.5.5.5", "2001:db8:5::5"),
 *       List.of(c.pod("pod-a1"), c.pod("pod-b1")));
 *   c.api().applyEgressService("web", LOADBALANCERIP, "100", Optional.of("node-a"));
 *   Traffic.Probe p = c.traffic().udp("pod-b1", Addresses.EXTERNAL_V4); // p.seen(): [udp from 5.5.5.5 at ext-a2]
 *   c.node("node-a").powerOff();  // SIGKILL of its agent, its links down
 *   c.node("node-a").powerOn();   // links and routes back, agent started again
 * }
 * }</pre>
 *
 * <p>Cleanup happens on every exit path: {@link #close()} (idempotent) stops the agents (SIGKILL: their kernel
 * state goes with the namespaces), the servers, the API server and deletes every namespace; a JVM shutdown hook
 * calls it; and a watchdog process ({@code sh}) started first kills the agents and deletes the namespaces if this
 * JVM dies without either (SIGKILL). All namespaces are named {@code esa-tb<id>-<role>}. The choices are made
 * on a {@link ClusterBuilder}; what outlives a dead JVM is {@link ClusterCleanup}'s.
 */
public final class Cluster implements AutoCloseable {
  /** A pod: its namespace, its node, both addresses. */
  public record Pod(String name, String node, int nodeIndex, int index, Namespace netns) {
    public String ip(IpFamily f) {
      return Addresses.podIp(nodeIndex, index, f);
    }
  }

  /** Uplink {@code index} of a node: the node's interface {@code up<index>}, its table, the router behind it. */
  public record Uplink(String node, int nodeIndex, int index, Namespace router) {
    /** The interface on the node. */
    public String device() {
      return "up" + index;
    }

    /** 0 for the main table (uplink 1), else {@link Addresses#SECOND_UPLINK_TABLE}. */
    public int table() {
      return index == 1 ? 0 : Addresses.SECOND_UPLINK_TABLE;
    }

    /** The node's address on this uplink (the source a masquerade through it shows). */
    public String nodeIp(IpFamily f) {
      return Addresses.uplinkNodeIp(nodeIndex, index, f);
    }

    /** The role of the router namespace, which is where the external host answers: {@code ext-a2}. */
    public String where() {
      return router.role();
    }
  }

  /** One node: its namespace, pods, uplinks and agent process. */
  public final class Node {
    private final String name;
    private final int index;
    private final Namespace netns;
    private final List<Pod> pods = new ArrayList<>();
    private final List<Uplink> uplinks = new ArrayList<>();
    private AgentProcess agent;

    Node(String name, int index, Namespace netns) {
      this.name = name;
      this.index = index;
      this.netns = netns;
    }

    public String name() {
      return name;
    }

    public int index() {
      return index;
    }

    public Namespace netns() {
      return netns;
    }

    public String ip(IpFamily f) {
      return Addresses.nodeIp(index, f);
    }

    public List<Pod> pods() {
      return Collections.unmodifiableList(pods);
    }

    public List<Uplink> uplinks() {
      return Collections.unmodifiableList(uplinks);
    }

    /** Uplink {@code k} (1-based). */
    public Uplink uplink(int k) {
      return uplinks.get(k - 1);
    }

    /** The agent process of this node (present unless the cluster was built {@code withoutAgents()}). */
    public AgentProcess agent() {
      if (agent == null) {
        throw new IllegalStateException("the cluster runs no agents");
      }
      return agent;
    }

    /** The agent stalls (SIGSTOP), as in a long GC pause: the node and its kernel state stay up. */
    public void suspendAgent() {
      agent().suspend();
    }

    /** The stalled agent runs again (SIGCONT). */
    public void resumeAgent() {
      agent().resume();
    }

    /** A hard power-off: SIGKILL of the agent, then every link of the node down (node network, uplinks, pods). */
    public void powerOff() {
      if (agent != null) {
        agent.kill();
      }
      List<String> lines = new ArrayList<>(List.of("link set eth0 down"));
      uplinks.forEach(u -> lines.add("link set " + u.device() + " down"));
      pods.forEach(p -> lines.add("link set p" + p.index() + " down"));
      netns.ip(lines.toArray(String[]::new));
    }

    /** Links up, the routes the kernel dropped with them back, the agent started again and ready. */
    public void powerOn() {
      List<String> lines = new ArrayList<>(List.of("link set eth0 up"));
      uplinks.forEach(u -> lines.add("link set " + u.device() + " up"));
      pods.forEach(p -> lines.add("link set p" + p.index() + " up"));
      lines.addAll(Wiring.nodeRoutes(this, nodes.values()));
      netns.ip(lines.toArray(String[]::new));
      if (agent != null) {
        agent.start();
        agent.awaitReady();
      }
    }

    @Override
    public String toString() {
      return name;
    }
  }


  /** Three nodes: node-a (2 uplinks, pod-a1), node-b (1 uplink, pod-b1 and pod-b2), node-c (2 uplinks, pod-c1). */
  public static ClusterBuilder standard() {
    return builder().node("node-a", 2, 1).node("node-b", 1, 2).node("node-c", 2, 1);
  }

  public static ClusterBuilder builder() {
    return new ClusterBuilder();
  }

  /** Builds {@code spec} and waits until every agent is ready; on failure removes what was built and rethrows. */
  static Cluster start(ClusterBuilder.Spec spec) {
    Cluster c = new Cluster(spec);
    try {
      c.build();
      return c;
    } catch (RuntimeException | Error e) {
      c.close();
      throw e;
    }
  }

  private final ClusterBuilder.Spec spec;
  private final String id;
  private final ClusterCleanup cleanup;
  private final Path dir;
  private final Map<String, Node> nodes = new LinkedHashMap<>();
  private final Map<String, Pod> pods = new LinkedHashMap<>();
  private final Map<String, Namespace> namespaces = new LinkedHashMap<>();
  private final List<Uplink> uplinks = new ArrayList<>();
  private final Traffic traffic = new Traffic();
  private final Thread shutdownHook;
  private Namespace lan;
  private Namespace client;
  private ApiServer api;
  private boolean closed;

  private Cluster(ClusterBuilder.Spec spec) {
    this.spec = spec;
    this.id = Integer.toHexString(ThreadLocalRandom.current().nextInt(1 << 20) | (1 << 20)).substring(1);
    this.cleanup = ClusterCleanup.createDir(id);
    this.dir = cleanup.dir();
    shutdownHook = new Thread(this::close, "testbed-cleanup-" + id);
    Runtime.getRuntime().addShutdownHook(shutdownHook);
  }


  // ---- the public surface ---------------------------------------------------------------------------

  public Node node(String name) {
    Node n = nodes.get(name);
    if (n == null) {
      throw new IllegalArgumentException("no node " + name + " (nodes: " + nodes.keySet() + ")");
    }
    return n;
  }

  public List<Node> nodes() {
    return List.copyOf(nodes.values());
  }

  public Pod pod(String name) {
    Pod p = pods.get(name);
    if (p == null) {
      throw new IllegalArgumentException("no pod " + name + " (pods: " + pods.keySet() + ")");
    }
    return p;
  }

  public ApiServer api() {
    return api;
  }

  public Traffic traffic() {
    return traffic;
  }

  /** Any namespace of the cluster by role: {@code lan}, {@code client}, {@code node-a}, {@code pod-b1}, {@code ext-a2}. */
  public Namespace netns(String role) {
    Namespace ns = namespaces.get(role);
    if (ns == null) {
      throw new IllegalArgumentException("no namespace " + role + " (roles: " + namespaces.keySet() + ")");
    }
    return ns;
  }

  /** Every namespace of the cluster, by role. */
  public Map<String, Namespace> namespaces() {
    return Collections.unmodifiableMap(namespaces);
  }

  /** The directory of the kubeconfig and the agents' logs ({@code <dir>/agent-<node>.log}). */
  public Path dir() {
    return dir;
  }

  /**
   * The kube-proxy stand-in: {@code node} DNATs {@code lbIp:port} (TCP) to {@code pod}'s echo port, in an nft table of
   * its own ({@code inet esa_testbed_kube_proxy}); for a pod on another node it also masquerades the forwarded
   * connection to the node's address, as kube-proxy does with {@code externalTrafficPolicy: Cluster}.
   */
  public void kubeProxy(String node, String lbIp, int port, Pod pod) {
    IpFamily f = lbIp.contains(":") ? IpFamily.V6 : IpFamily.V4;
    String ip = f == IpFamily.V4 ? "ip" : "ip6";
    String target = f == IpFamily.V4 ? pod.ip(f) + ":" + Traffic.ECHO_PORT : "[" + pod.ip(f) + "]:" + Traffic.ECHO_PORT;
    boolean remote = !pod.node().equals(node);
    node(node).netns().nft("table inet esa_testbed_kube_proxy {\n"
        + "  chain prerouting { type nat hook prerouting priority dstnat; policy accept; }\n"
        + "  chain postrouting { type nat hook postrouting priority srcnat; policy accept;\n"
        + "    meta mark & 0x4000 == 0x4000 masquerade\n"
        + "  }\n"
        + "}\n"
        + "add rule inet esa_testbed_kube_proxy prerouting " + ip + " daddr " + lbIp + " tcp dport " + port
        + (remote ? " meta mark set mark | 0x4000" : "") + " dnat " + ip + " to " + target + "\n");
  }

  /** Removes the kube-proxy stand-in of {@code node} (all its DNATs). */
  public void removeKubeProxy(String node) {
    node(node).netns().tryExec("nft", "delete", "table", "inet", "esa_testbed_kube_proxy");
  }

  /** The client reaches the LB IPs through {@code node}'s uplink {@code k} (ext-a1 at first). */
  public void routeClientVia(String node, int k) {
    Node n = node(node);
    client.ip("route replace " + Addresses.LB_RANGE_V4 + " via " + Addresses.clientLinkRouterIp(n.index(), k, IpFamily.V4)
            + " src " + Addresses.CLIENT_V4,
        "route replace " + Addresses.LB_RANGE_V6 + " via " + Addresses.clientLinkRouterIp(n.index(), k, IpFamily.V6)
            + " src " + Addresses.CLIENT_V6);
  }

  /** Packets from the LB range that reached the client through the router behind {@code uplink} (both families). */
  public long lbPacketsToClientVia(Uplink uplink) {
    var counter = client.json("nft", "-j", "list", "counter", "inet", "esa_testbed_probe", Wiring.counterName(uplink));
    for (var item : counter.path("nftables")) {
      if (item.has("counter")) {
        return item.path("counter").path("packets").asLong();
      }
    }
    throw new IllegalStateException("no counter " + Wiring.counterName(uplink) + " in the client");
  }

  // ---- building -------------------------------------------------------------------------------------

  /**
   * Few processes, since each costs much on a busy machine: every namespace in one {@code ip -batch}, sysctls
   * written from a thread inside each namespace, one {@code ip -n <ns> -batch} per namespace, one {@code nft} per
   * node. The agents start as soon as their namespaces and the API exist, so their JVMs boot while the rest is
   * wired.
   */
  private void build() {
    cleanup.startWatchdog();
    spec.progress().accept("building the cluster's network namespaces (esa-tb" + id + "-*)");
    lan = model("lan");
    client = model("client");
    int i = 0;
    for (ClusterBuilder.NodeSpec ns : spec.nodes()) {
      i++;
      Node node = new Node(ns.name(), i, model(ns.name()));
      nodes.put(ns.name(), node);
      String letter = ns.name().startsWith("node-") ? ns.name().substring(5) : "n" + i;
      for (int j = 1; j <= ns.pods(); j++) {
        Pod pod = new Pod("pod-" + letter + j, ns.name(), i, j, model("pod-" + letter + j));
        node.pods.add(pod);
        pods.put(pod.name(), pod);
      }
      for (int k = 1; k <= ns.uplinks(); k++) {
        Uplink u = new Uplink(ns.name(), i, k, model("ext-" + letter + k));
        node.uplinks.add(u);
        uplinks.add(u);
      }
    }
    // the in-process API server takes seconds to start: meanwhile, the namespaces
    CompletableFuture<ApiServer> apiStarting = CompletableFuture.supplyAsync(() -> new ApiServer(dir, spec.apiProxy(), spec.expiringWatches()));
    try {
      Wiring.createNamespaces(namespaces.values(), cleanup.namespaceList(), nodes.keySet(), spec.nodeRpFilter(), traffic);
    } finally {
      api = join(apiStarting);
    }
    spec.beforeAgents().accept(api);
    if (spec.agents()) {
      spec.progress().accept("starting " + nodes.size() + " agent processes (" + String.join(", ", nodes.keySet()) + ")");
      for (Node node : nodes.values()) {
        List<String> args = new ArrayList<>(List.of("--host-probe-netns", lan.name()));
        args.addAll(spec.agentArgs());
        node.agent = new AgentProcess(node.name(), node.netns().name(), api.kubeconfig(),
            dir.resolve("agent-" + node.name() + ".log"), args, spec.agentEnv(), this::writePids);
        node.agent.start();
      }
    }
    for (Node node : nodes.values()) {
      api.createNode(node.name(), node.index());
      for (Pod p : node.pods) {
        api.createPod(p);
      }
    }

    for (Node node : nodes.values()) {
      Wiring.wireNode(node, lan, nodes.values());
    }
    Wiring.wireClient(client, uplinks);
    for (Node node : nodes.values()) {
      Wiring.wirePodsAndRouters(node);
    }
    List<String> bridge = new ArrayList<>(List.of("link set lo up", "link add br0 type bridge", "link set br0 up",
        "addr add " + Addresses.controlPlaneIp(IpFamily.V4) + "/24 dev br0",
        "addr add " + Addresses.controlPlaneIp(IpFamily.V6) + "/64 dev br0 nodad"));
    for (Node node : nodes.values()) {
      bridge.add("link set " + node.name() + " master br0");
      bridge.add("link set " + node.name() + " up");
    }
    lan.ip(bridge.toArray(String[]::new));
    Uplink first = uplinks.get(0);
    routeClientVia(first.node(), first.index());

    for (Uplink u : uplinks) {
      traffic.serve(u.where(), List.of(Addresses.EXTERNAL_V4, Addresses.EXTERNAL_V6));
    }
    for (Pod p : pods.values()) {
      traffic.serve(p.name(), List.of(p.ip(IpFamily.V4), p.ip(IpFamily.V6)));
    }
    if (spec.agents()) {
      for (Node node : nodes.values()) {
        node.agent.awaitReady();
      }
    }
  }

  private static ApiServer join(CompletableFuture<ApiServer> starting) {
    try {
      return starting.join();
    } catch (java.util.concurrent.CompletionException e) {
      throw e.getCause() instanceof RuntimeException r ? r : e;
    }
  }

  private Namespace model(String role) {
    Namespace ns = new Namespace("esa-tb" + id + "-" + role, role);
    namespaces.put(role, ns);
    traffic.register(ns);
    return ns;
  }

  /** Tells the watchdog the agents' current pids (an agent restarted has a new one). */
  private synchronized void writePids() {
    List<Long> pids = new ArrayList<>();
    for (Node n : nodes.values()) {
      if (n.agent != null) {
        n.agent.pid().ifPresent(pids::add);
      }
    }
    cleanup.agentPids(pids);
  }

  /**
   * Kills the agents (SIGKILL, in parallel), stops the servers and the API server, deletes every namespace
   * (their kernel state goes with them) and the temporary directory (unless {@code -Dtestbed.keep=true}: then
   * the agents' logs stay). Idempotent; also run by a shutdown hook.
   */
  @Override
  public void close() {
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
    }
    for (Node n : nodes.values()) {
      if (n.agent != null && n.agent.running()) {
        n.agent.pid().flatMap(ProcessHandle::of).ifPresent(ProcessHandle::destroyForcibly);
      }
    }
    for (Node n : nodes.values()) {
      if (n.agent != null) {
        n.agent.kill();
      }
    }
    traffic.close();
    if (api != null) {
      try {
        api.close();
      } catch (RuntimeException e) {
        // best effort
      }
    }
    List<String> names = new ArrayList<>(namespaces.values().stream().map(Namespace::name).toList());
    Collections.reverse(names);
    ClusterCleanup.deleteNamespaces(names);
    cleanup.finish(Boolean.getBoolean("testbed.keep"));
    try {
      Runtime.getRuntime().removeShutdownHook(shutdownHook);
    } catch (IllegalStateException e) {
      // shutting down: this is the hook
    }
  }


  /** Whether a namespace of this cluster still exists (for tests of the cleanup). */
  public boolean anyNamespaceLeft() {
    String list = Namespace.runOrThrow(List.of("ip", "netns", "list"));
    return list.contains("esa-tb" + id + "-");
  }

  /** The prefix of every namespace of this cluster. */
  public String namespacePrefix() {
    return "esa-tb" + id + "-";
  }

  Optional<Path> kubeconfig() {
    return api == null ? Optional.empty() : Optional.of(api.kubeconfig());
  }
}
