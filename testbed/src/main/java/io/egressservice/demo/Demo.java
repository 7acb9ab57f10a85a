package io.egressservice.demo;

import io.egressservice.ip.IpFamily;
import io.egressservice.testbed.Addresses;
import io.egressservice.testbed.ApiServer;
import io.egressservice.testbed.Cluster;
import io.egressservice.testbed.Traffic;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.BooleanSupplier;
import org.ovn.k8s.v1.EgressServiceSpec.SourceIPBy;

/**
 * The embedded demo: a two-node {@link Cluster} of network namespaces (each node wired as a CNI would, with its
 * masquerade; node-a with two uplinks, node-b with one; every uplink's router owns the external host), fabric8's
 * mock API server in CRUD mode, and the real agent process on each node (allocator on). Real UDP packets show
 * the source address and the uplink before and after an EgressService is created, changed and deleted, including
 * a pod on node-b that leaves through node-a with the LB IP.
 */
public final class Demo implements AutoCloseable {
  static final String SERVICE = "checkout";
  static final String LB_IP = Addresses.lbIp(5, IpFamily.V4);
  static final String LB_IP_V6 = Addresses.lbIp(5, IpFamily.V6);
  static final Duration STEP_LIMIT = Duration.ofSeconds(10);

  private final PrintWriter out;
  private Cluster cluster;
  private boolean closed;
  /** The previous step, to say what differs from it: its number, pod and our rules per node (empty before step 1). */
  private Optional<Shown> previous = Optional.empty();
  /** What was applied to the API since the previous step, for the step's "what differs" line. */
  private String appliedSince = "";

  /** What a step showed. */
  private record Shown(String number, Cluster.Pod pod, Map<String, List<String>> rules) {}

  public Demo(PrintWriter out) {
    this.out = out;
  }

  /** Runs the walk-through; returns true when every step saw what it should. */
  public boolean run() {
    long start = System.nanoTime();
    say("== egress-service-agent demo ==");
    cluster = Cluster.builder().node("node-a", 2, 1).node("node-b", 1, 1).progress(s -> say("%s", s)).start();
    Cluster.Node a = cluster.node("node-a");
    Cluster.Node b = cluster.node("node-b");
    Cluster.Pod podA = cluster.pod("pod-a1");
    Cluster.Pod podB = cluster.pod("pod-b1");
    say("cluster: node-a %s (main table -> uplink-1, table 100 -> uplink-2), node-b %s (uplink-1), on one node "
        + "network; every uplink's router owns the external host %s; the pods' traffic to the outside is "
        + "masqueraded by a CNI-like rule; in-process Kubernetes API (CRUD mock) at %s; the real agent process "
        + "on each node (allocator on)", a.ip(IpFamily.V4), b.ip(IpFamily.V4), Addresses.EXTERNAL_V4,
        cluster.api().client().getMasterUrl());
    cluster.api().createLoadBalancer(SERVICE, "172.30.0.10", "fd02::10", List.of(LB_IP, LB_IP_V6), List.of(podA, podB));
    say("LoadBalancer Service %s/%s (LB IP %s) with endpoints %s (%s on node-a) and %s (%s on node-b)",
        ApiServer.NAMESPACE, SERVICE, LB_IP, podA.name(), podA.ip(IpFamily.V4), podB.name(), podB.ip(IpFamily.V4));

    boolean ok = true;
    ok &= step("1. no EgressService: the pods' traffic is untouched (the CNI masquerades it to the node's address)",
        () -> !ours(a) && !ours(b), podA, a.uplink(1), a.uplink(1).nodeIp(IpFamily.V4));

    cluster.api().applyEgressService(SERVICE, SourceIPBy.LOADBALANCERIP, "100", Optional.empty());
    appliedSince = "EgressService " + SERVICE + " created (LoadBalancerIP, network 100)";
    Optional<String> host = awaitHost("node-a");
    say("\n   applied: EgressService %s/%s {sourceIPBy: LoadBalancerIP, network: \"100\"}; the allocator chose "
        + "status.host: %s", ApiServer.NAMESPACE, SERVICE, host.orElse("(none within " + STEP_LIMIT.toSeconds() + " s)"));
    ok &= host.isPresent();
    ok &= step("2. LoadBalancerIP + network 100: the pod on the host leaves through table 100 with the LB IP",
        // node-b's steering rule too: step 3 then shows that only the sending pod differs
        () -> rules(a).contains("from " + podA.ip(IpFamily.V4) + " lookup 100") && snat(a, podA) && snat(a, podB)
            && rules(b).contains("from " + podB.ip(IpFamily.V4) + " lookup"), podA, a.uplink(2), LB_IP);
    ok &= step("3. the pod on node-b is steered to the host node-a and leaves there with the LB IP",
        () -> snat(a, podB), podB, a.uplink(2), LB_IP);

    cluster.api().applyEgressService(SERVICE, SourceIPBy.NETWORK, "100", Optional.empty());
    appliedSince = "EgressService " + SERVICE + " changed: sourceIPBy LoadBalancerIP -> Network";
    say("\n   applied: EgressService %s/%s {sourceIPBy: Network, network: \"100\"} (status.host: ALL)",
        ApiServer.NAMESPACE, SERVICE);
    ok &= step("4. Network + network 100: leaves through table 100 with the node's address there, no SNAT to the LB IP",
        () -> rules(a).contains("from " + podA.ip(IpFamily.V4) + " lookup 100") && !snat(a, podA), podA, a.uplink(2),
        a.uplink(2).nodeIp(IpFamily.V4));

    cluster.api().deleteEgressService(SERVICE);
    appliedSince = "EgressService " + SERVICE + " deleted";
    say("\n   deleted: EgressService %s/%s", ApiServer.NAMESPACE, SERVICE);
    ok &= step("5. EgressService deleted: back to the main table on both nodes, nothing owned left",
        () -> !ours(a) && !ours(b) && !snat(a, podA) && !snat(a, podB), podB, b.uplink(1),
        b.uplink(1).nodeIp(IpFamily.V4));

    say("\n%s in %.1f s", ok ? "demo finished: every step saw what it should" : "demo FAILED: see the steps above",
        (System.nanoTime() - start) / 1e9);
    return ok;
  }

  /**
   * Waits (at most {@link #STEP_LIMIT}) until the kernel shows the step's state and the external side sees what it
   * should, printing our rules of both nodes and the last thing seen.
   */
  private boolean step(String title, BooleanSupplier kernelReady, Cluster.Pod pod, Cluster.Uplink where,
      String source) {
    say("\n%s", title);
    String expected = name(where) + " saw " + source;
    long deadline = System.nanoTime() + STEP_LIMIT.toNanos();
    boolean ready;
    String seen;
    do {
      ready = kernelReady.getAsBoolean();
      seen = ready ? probe(pod) : "";
    } while (!(ready && seen.equals(expected)) && System.nanoTime() < deadline && pause(100));
    if (!ready) {
      say("   the agents did not reach the expected kernel state within %d s", STEP_LIMIT.toSeconds());
      seen = probe(pod);
    }
    Map<String, List<String>> now = new LinkedHashMap<>();
    for (Cluster.Node n : cluster.nodes()) {
      now.put(n.name(), rules(n).lines().filter(l -> l.contains("proto 201")).map(String::trim).toList());
    }
    showRules(title.substring(0, title.indexOf('.')), pod, now);
    boolean ok = ready && seen.equals(expected);
    say("   %s %s (on %s) -> %s:%d over UDP: %s   [%s]", pod.name(), pod.ip(IpFamily.V4), pod.node(),
        Addresses.EXTERNAL_V4, Traffic.ECHO_PORT, seen, ok ? "as expected" : "EXPECTED " + expected);
    return ok;
  }

  /**
   * Our rules of every node: in full at the first step; after it, what differs from the previous step (one line),
   * then per node only the rules removed ({@code -}) and added ({@code +}), or that they are unchanged. Without
   * it, steps 2 and 3 printed the same rule block and left the reader to spot that nothing but the pod differs.
   */
  private void showRules(String number, Cluster.Pod pod, Map<String, List<String>> now) {
    if (previous.isEmpty()) {
      now.forEach((node, rules) -> {
        say("   ip rule on %s (ours): %s", node, rules.isEmpty() ? "none" : "");
        rules.forEach(l -> say("     %s", l));
      });
    } else {
      Shown before = previous.get();
      List<String> differs = new ArrayList<>();
      differs.add(appliedSince.isEmpty() ? "nothing applied to the API" : appliedSince);
      List<String> changedNodes = new ArrayList<>();
      now.forEach((node, rules) -> {
        List<String> was = before.rules().getOrDefault(node, List.of());
        long removed = was.stream().filter(l -> !rules.contains(l)).count();
        long added = rules.stream().filter(l -> !was.contains(l)).count();
        if (removed + added > 0) {
          changedNodes.add(node + " " + (added > 0 ? "+" + added : "") + (added > 0 && removed > 0 ? "/" : "")
              + (removed > 0 ? "-" + removed : ""));
        }
      });
      differs.add(changedNodes.isEmpty() ? "our ip rules are the same on every node"
          : "our ip rules changed on " + String.join(", ", changedNodes));
      differs.add(pod.name().equals(before.pod().name()) ? "the packet comes from " + pod.name() + " as before"
          : "the packet comes from " + pod.name() + " on " + pod.node() + " (" + before.pod().name() + " on "
              + before.pod().node() + " before)");
      say("   what differs from step %s: %s", before.number(), String.join("; ", differs));
      now.forEach((node, rules) -> {
        List<String> was = before.rules().getOrDefault(node, List.of());
        if (rules.equals(was)) {
          say("   ip rule on %s (ours): unchanged since step %s (%s)", node, before.number(),
              rules.isEmpty() ? "none" : rules.size() + " rule(s)");
          return;
        }
        say("   ip rule on %s (ours), against step %s:", node, before.number());
        was.stream().filter(l -> !rules.contains(l)).forEach(l -> say("     - %s", l));
        rules.stream().filter(l -> !was.contains(l)).forEach(l -> say("     + %s", l));
      });
    }
    previous = Optional.of(new Shown(number, pod, now));
    appliedSince = "";
  }

  /** One UDP datagram from the pod (three tries); "uplink-2 of node-a saw 5.5.5.5", or why nothing was seen. */
  private String probe(Cluster.Pod pod) {
    for (int attempt = 0; attempt < 3; attempt++) {
      Traffic.Probe p = cluster.traffic().udp(pod.name(), Addresses.EXTERNAL_V4);
      if (!p.seen().isEmpty()) {
        Traffic.Seen s = p.seen().get(0);
        return whereName(s.where()) + " saw " + s.source();
      }
    }
    return "nobody saw it (3 datagrams)";
  }

  private String name(Cluster.Uplink u) {
    return "uplink-" + u.index() + " of " + u.node();
  }

  private String whereName(String role) {
    for (Cluster.Node n : cluster.nodes()) {
      for (Cluster.Uplink u : n.uplinks()) {
        if (u.where().equals(role)) {
          return name(u);
        }
      }
    }
    return role;
  }

  private Optional<String> awaitHost(String expected) {
    long deadline = System.nanoTime() + STEP_LIMIT.toNanos();
    Optional<String> host = cluster.api().host(SERVICE);
    while (!host.equals(Optional.of(expected)) && System.nanoTime() < deadline && pause(50)) {
      host = cluster.api().host(SERVICE);
    }
    return host;
  }

  private static String rules(Cluster.Node n) {
    return n.netns().exec("ip", "rule", "show");
  }

  private static boolean ours(Cluster.Node n) {
    return rules(n).contains("proto 201");
  }

  /** Whether node {@code n}'s SNAT map sends {@code pod} to an LB IP. */
  private static boolean snat(Cluster.Node n, Cluster.Pod pod) {
    var r = n.netns().tryExec("nft", "list", "map", "inet", "egress_service_agent", "snat_v4");
    // an element reads "10.128.1.5 comment \"shop/checkout\" : 5.5.5.5"
    return r.exitCode() == 0 && java.util.regex.Pattern.compile("(^|[\\s{,])" + pod.ip(IpFamily.V4).replace(".", "\\.")
        + "\\s").matcher(r.stdout()).find();
  }

  private static boolean pause(long millis) {
    try {
      Thread.sleep(millis);
      return true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  private void say(String format, Object... args) {
    out.println(String.format(format, args));
    out.flush();
  }

  /** Stops the agents, removes the namespaces and the API server; safe to call twice. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    if (cluster != null) {
      int count = cluster.namespaces().size();
      cluster.close();
      say("cleaned up: agents stopped, %d namespaces (%s*) removed", count, cluster.namespacePrefix());
    }
  }
}
