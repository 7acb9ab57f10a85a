package io.egressservice.demo;

import io.egressservice.controller.KubernetesEvents;
import io.egressservice.controller.NodeAgent;
import io.egressservice.dataplane.Dataplane;
import io.egressservice.metrics.AgentMetrics;
import io.egressservice.objects.EgressServices;
import io.egressservice.plan.PlanConfig;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.ServiceBuilder;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointBuilder;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSliceBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import java.io.PrintWriter;
import java.time.Clock;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Optional;
import java.util.function.BooleanSupplier;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceSpec;

/**
 * The embedded demo: an in-process API server (fabric8's mock server in CRUD mode), the demo
 * topology, and the real node agent (informers, plan, dataplane) acting in the node namespace; real
 * UDP packets show the source address and the uplink before and after an EgressService is created,
 * changed and deleted.
 */
public final class Demo implements AutoCloseable {
  static final String NODE = "node-a";
  static final String NS = "shop";
  static final String SERVICE = "checkout";
  static final String LB_IP = "5.5.5.5";

  private final PrintWriter out;
  private final DemoTopology topology = new DemoTopology();
  private KubernetesMockServer server;
  private KubernetesClient client;
  private Dataplane dataplane;
  private NodeAgent agent;
  private boolean closed;

  public Demo(PrintWriter out) {
    this.out = out;
  }

  /** Runs the walk-through; returns true when every step saw what it should. */
  public boolean run() {
    long start = System.nanoTime();
    say("== egress-service-agent demo ==");
    say("building namespaces: pod %s (%s), node %s, uplink-1 %s, uplink-2 %s (both own external host %s)",
        topology.pod, DemoTopology.POD_IP, topology.node, topology.up1, topology.up2, DemoTopology.EXTERNAL);
    topology.build();
    server = new KubernetesMockServer(new Context(), new MockWebServer(), new HashMap<>(), new KubernetesCrudDispatcher(),
        false);
    server.init();
    client = server.createClient();
    say("in-process Kubernetes API (CRUD mock) at %s", client.getMasterUrl());
    dataplane = Dataplane.open(Optional.of(topology.node), PlanConfig.DEFAULT_PRIORITY, PlanConfig.DEFAULT_RULE_PROTOCOL);
    agent = new NodeAgent(client, dataplane,
        new NodeAgent.Settings(NODE, PlanConfig.defaults(), Duration.ofSeconds(30), Duration.ofSeconds(2)),
        new AgentMetrics(), new KubernetesEvents(client, NODE, Clock.systemUTC()), Clock.systemUTC());
    agent.start();
    say("node agent started for node %s in netns %s (main table -> uplink-1, table 100 -> uplink-2)", NODE, topology.node);
    createCluster();

    boolean ok = true;
    ok &= step("1. no EgressService: the pod's traffic is untouched",
        () -> !rules().contains("proto 201"), "uplink-1 saw " + DemoTopology.POD_IP);

    EgressService es = egressService(EgressServiceSpec.SourceIPBy.LOADBALANCERIP, "100", NODE);
    client.resources(EgressService.class).resource(es).create();
    say("\n   applied: EgressService %s/%s {sourceIPBy: LoadBalancerIP, network: \"100\"}, status.host: %s", NS, SERVICE, NODE);
    ok &= step("2. LoadBalancerIP + network 100: leaves through table 100 with the LB IP",
        () -> rules().contains("from " + DemoTopology.POD_IP + " lookup 100") && snatInstalled(), "uplink-2 saw " + LB_IP);

    client.resources(EgressService.class).resource(egressService(EgressServiceSpec.SourceIPBy.NETWORK, "100", "ALL"))
        .update();
    say("\n   applied: EgressService %s/%s {sourceIPBy: Network, network: \"100\"}, status.host: ALL", NS, SERVICE);
    ok &= step("3. Network + network 100: leaves through table 100, no SNAT to the LB IP",
        () -> rules().contains("from " + DemoTopology.POD_IP + " lookup 100") && !snatInstalled(),
        "uplink-2 saw " + DemoTopology.POD_IP);

    client.resources(EgressService.class).inNamespace(NS).withName(SERVICE).delete();
    say("\n   deleted: EgressService %s/%s", NS, SERVICE);
    ok &= step("7. EgressService deleted: back to the main table, nothing owned left",
        () -> !rules().contains("proto 201") && !snatInstalled(), "uplink-1 saw " + DemoTopology.POD_IP);

    say("\n%s in %.1f s", ok ? "demo finished: every step saw what it should" : "demo FAILED: see the steps above",
        (System.nanoTime() - start) / 1e9);
    return ok;
  }

  private void createCluster() {
    client.nodes().resource(new NodeBuilder().withNewMetadata().withName(NODE).endMetadata()
        .withNewSpec().withPodCIDRs(List.of("10.128.0.0/24")).endSpec()
        .withNewStatus().addNewAddress().withType("InternalIP").withAddress("198.51.100.1").endAddress().endStatus()
        .build()).create();
    client.services().resource(new ServiceBuilder().withNewMetadata().withName(SERVICE).withNamespace(NS).endMetadata()
        .withNewSpec().withType("LoadBalancer").withClusterIP("172.30.0.10").withClusterIPs("172.30.0.10").endSpec()
        .withNewStatus().withNewLoadBalancer().addNewIngress().withIp(LB_IP).endIngress().endLoadBalancer().endStatus()
        .build()).create();
    client.discovery().v1().endpointSlices().resource(new EndpointSliceBuilder()
        .withNewMetadata().withName(SERVICE + "-1").withNamespace(NS)
          .addToLabels("kubernetes.io/service-name", SERVICE).endMetadata()
        .withAddressType("IPv4")
        .withEndpoints(new EndpointBuilder().withAddresses(DemoTopology.POD_IP).withNodeName(NODE).build())
        .build()).create();
    say("cluster: Node %s (podCIDR 10.128.0.0/24), LoadBalancer Service %s/%s (LB IP %s) with endpoint %s on %s",
        NODE, NS, SERVICE, LB_IP, DemoTopology.POD_IP, NODE);
  }

  private static EgressService egressService(EgressServiceSpec.SourceIPBy mode, String network, String host) {
    return EgressServices.of(NS, SERVICE, mode, network, host);
  }

  /** Waits (bounded) until the kernel shows the step's state, then sends a packet and checks what was seen. */
  private boolean step(String title, BooleanSupplier kernelReady, String expected) {
    say("\n%s", title);
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    boolean ready = kernelReady.getAsBoolean();
    while (!ready && System.nanoTime() < deadline) {
      pause(50);
      ready = kernelReady.getAsBoolean();
    }
    if (!ready) {
      say("   the agent did not reach the expected kernel state within 10 s");
    }
    List<String> ours = rules().lines().filter(l -> l.contains("proto 201")).toList();
    say("   ip rule (ours): %s", ours.isEmpty() ? "none" : "");
    ours.forEach(l -> say("     %s", l.trim()));
    String seen = topology.probeFromPod();
    boolean ok = ready && seen.equals(expected);
    say("   pod %s -> %s:%d over UDP: %s   [%s]", DemoTopology.POD_IP, DemoTopology.EXTERNAL, DemoTopology.PORT, seen,
        ok ? "as expected" : "EXPECTED " + expected);
    return ok;
  }

  private String rules() {
    return Shell.in(topology.node, "ip", "rule", "show");
  }

  private boolean snatInstalled() {
    return dataplane.observe().nft().snat().stream().anyMatch(e -> e.source().toString().equals(DemoTopology.POD_IP));
  }

  private static void pause(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void say(String format, Object... args) {
    out.println(String.format(format, args));
    out.flush();
  }

  /** Stops the agent, removes what it owns, the namespaces and the API server; safe to call twice. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    if (agent != null) {
      agent.close();
    }
    if (dataplane != null) {
      try {
        dataplane.cleanup();
      } catch (RuntimeException e) {
        // the namespace goes away below anyway
      }
      dataplane.close();
    }
    if (client != null) {
      client.close();
    }
    if (server != null) {
      server.destroy();
    }
    topology.close();
    say("cleaned up: namespaces %s, %s, %s, %s removed", topology.pod, topology.node, topology.up1, topology.up2);
  }
}
