package io.egressservice.controller;

import io.egressservice.kernel.linux.LinuxKernel;
import static io.egressservice.controller.KubeObjects.NS;
import static io.egressservice.controller.KubeObjects.egressService;
import static io.egressservice.controller.KubeObjects.lbService;
import static io.egressservice.controller.KubeObjects.node;
import static io.egressservice.controller.KubeObjects.slice;

import io.egressservice.dataplane.Dataplane;
import io.egressservice.metrics.AgentMetrics;
import io.egressservice.testing.MockApiFields;
import io.egressservice.testing.Netns;
import io.egressservice.testing.Privileges;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceSpec.SourceIPBy;

/**
 * The shared fixture of the controller tests that run a real node agent against fabric8's mock API server: the
 * test's mock client (register it with {@code @RegisterExtension} beside {@code @EnableKubernetesMockClient}), a
 * real kernel in a throwaway namespace per test with the agent's {@link Dataplane} on it, the agents' Node, and the
 * agents (and clients) the test starts. After each test it closes those newest first and only then the kernel, so
 * that no agent reconciles into a namespace that is gone.
 */
final class AgentKernel implements BeforeEachCallback, AfterEachCallback {
  /** The node every agent here runs as. */
  static final String NODE = "node-a";
  /** What table 100 routes (documentation prefixes): a network with a route of each family. */
  static final String ROUTED_BY_TABLE_100_V4 = "198.51.100.0/24";
  static final String ROUTED_BY_TABLE_100_V6 = "2001:db8:ffff::/48";

  private final String name;
  private final String podCidr;
  private KubernetesClient client;
  private Netns ns;
  private Dataplane dataplane;
  private final List<AutoCloseable> toClose = new ArrayList<>();

  /**
   * A namespace named after {@code name} with a dataplane at priority 5000, protocol 201 (skips without root), table
   * 100 routing a prefix of each family, and Node node-a (192.168.1.10, pod CIDR 10.128.0.0/24).
   */
  AgentKernel(String name) {
    this(name, "10.128.0.0/24");
  }

  /** The same with node-a's pod CIDR {@code podCidr} (a test with thousands of endpoints needs a wider one). */
  AgentKernel(String name, String podCidr) {
    this.name = name;
    this.podCidr = podCidr;
  }

  @Override
  public void beforeEach(ExtensionContext context) {
    Privileges.assumeNetAdmin();
    client = MockApiFields.injected(context, KubernetesClient.class);
    ns = Netns.create(name);
    // Table 100, the network the tests name, routes something of each family, as a real network does (nothing is
    // ever sent through it here); a test of a network without routes names another table.
    ns.exec("ip", "route", "add", "blackhole", ROUTED_BY_TABLE_100_V4, "table", "100");
    ns.exec("ip", "-6", "route", "add", "blackhole", ROUTED_BY_TABLE_100_V6, "table", "100");
    dataplane = Dataplane.open(LinuxKernel.open(Optional.of(ns.name())), 5000, 201);
    client.nodes().resource(node(NODE, "192.168.1.10", podCidr)).create();
  }

  Netns ns() {
    return ns;
  }

  Dataplane dataplane() {
    return dataplane;
  }

  /** {@code resource}, closed after the test, before anything opened earlier. */
  <T extends AutoCloseable> T closeLater(T resource) {
    toClose.add(resource);
    return resource;
  }

  /** An agent of node-a on the test's client, writing Events through it, started. */
  NodeAgent start(NodeAgent.Settings settings, AgentMetrics metrics) {
    return start(client, settings, metrics, new KubernetesEvents(client, NODE, Clock.systemUTC()));
  }

  /** An agent on {@code agentClient} (for example one built as {@code run} builds it), started. */
  NodeAgent start(KubernetesClient agentClient, NodeAgent.Settings settings, AgentMetrics metrics,
      EventSink events) {
    NodeAgent agent = new NodeAgent(agentClient, dataplane, settings, metrics, events, Clock.systemUTC());
    agent.start();
    return closeLater(agent);
  }

  /**
   * The EgressService {@code name} (LoadBalancerIP, {@code network}, host node-a), its LoadBalancer Service
   * (ClusterIP 172.30.0.10, LB IP 5.5.5.5) and one slice {@code name-1} of {@code podIps} on node-a.
   */
  void createService(String name, String network, String... podIps) {
    client.resources(EgressService.class).resource(egressService(name, SourceIPBy.LOADBALANCERIP, network, NODE))
        .create();
    client.services().resource(lbService(name, "172.30.0.10", "5.5.5.5")).create();
    client.discovery().v1().endpointSlices().resource(slice(name, name + "-1", NODE, podIps)).create();
  }

  /** {@code ip rule show} in the node's namespace. */
  String rules() {
    return ns.exec("ip", "rule", "show");
  }

  /** The IPv4 SNAT map as nft lists it (empty when the table is not there). */
  String snat() {
    return ns.tryExec("nft", "list", "map", "inet", "egress_service_agent", "snat_v4").stdout();
  }

  /** The Events of {@code reason} in the services' namespace. */
  List<Event> events(String reason) {
    return client.v1().events().inNamespace(NS).list().getItems().stream()
        .filter(e -> reason.equals(e.getReason())).toList();
  }

  @Override
  public void afterEach(ExtensionContext context) throws Exception {
    try {
      for (int i = toClose.size() - 1; i >= 0; i--) {
        toClose.get(i).close();
      }
    } finally {
      toClose.clear();
      try {
        if (dataplane != null) {
          dataplane.close();
        }
      } finally {
        if (ns != null) {
          ns.close();
        }
      }
    }
  }
}
