package io.egressservice.allocator;

import static io.egressservice.allocator.MockCluster.LEASE_NS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.channels.ServerSocketChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Failover through the real client, informers and leader election against the mock API server, with real health
 * servers on loopback addresses as the nodes' agents: node1 at 127.0.1.1, node2 at 127.0.1.2, same port; each
 * answers naming its node, as the agent does. A silent node is one whose SYNs go unanswered (its port's accept
 * queue is full, so the kernel drops them, as a powered-off node's go unanswered); a stalled agent is one whose
 * kernel completes the handshake but that never answers; a restarting agent is one whose port refuses connections.
 */
@EnableKubernetesMockClient(crud = true)
class HostFailoverMockServerTest {
  KubernetesMockServer server;
  KubernetesClient client;

  private MockCluster cluster;
  private int port;
  private final Map<Integer, AutoCloseable> agents = new HashMap<>();
  private final List<AutoCloseable> toClose = new ArrayList<>();

  @BeforeEach
  void setUp() throws Exception {
    cluster = new MockCluster(client).crd();
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.1.1"))) {
      port = s.getLocalPort();
    }
    for (int i = 1; i <= 2; i++) {
      node(i);
      healthy(i);
    }
    cluster.lbService("web", "203.0.113.5");
    cluster.endpoints("web", 1, 2);
  }

  @AfterEach
  void tearDown() throws Exception {
    for (AutoCloseable c : toClose) {
      c.close();
    }
    for (AutoCloseable a : agents.values()) {
      a.close();
    }
  }

  private void node(int i) {
    client.resource(new NodeBuilder()
        .withNewMetadata().withName("node" + i).endMetadata()
        .withNewSpec().withPodCIDR("10.128." + i + ".0/24").withPodCIDRs("10.128." + i + ".0/24").endSpec()
        .withNewStatus()
            .addNewAddress().withType("InternalIP").withAddress("127.0.1." + i).endAddress()
            .addNewCondition().withType("Ready").withStatus("True").endCondition()
        .endStatus().build()).create();
  }

  /** The agent of node i stops: connection refused. */
  private void stop(int i) throws Exception {
    AutoCloseable a = agents.remove(i);
    if (a != null) {
      a.close();
    }
  }

  /** The agent of node i answers /healthz with 200 (binding again as soon as the old socket is really closed). */
  private void healthy(int i) throws Exception {
    FakeAgent a = agents.get(i) instanceof FakeAgent f ? f : null;
    if (a == null) {
      stop(i);
      a = await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(50)).ignoreExceptions()
          .until(() -> new FakeAgent(new InetSocketAddress("127.0.1." + i, port), "node" + i), x -> true);
      agents.put(i, a);
    }
    a.silent = false;
  }

  /** The agent of node i stalls (SIGSTOP, a long GC): the kernel completes handshakes, nothing answers. */
  private void stalled(int i) {
    ((FakeAgent) agents.get(i)).silent = true;
  }

  /** Node i is silent: its SYNs go unanswered, as a powered-off node's. */
  private void silent(int i) throws Exception {
    stop(i);
    InetSocketAddress address = new InetSocketAddress("127.0.1." + i, port);
    SilentPort p = await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(50)).ignoreExceptions()
        .until(() -> new SilentPort(address), x -> true);
    agents.put(i, p);
  }

  /**
   * A listening socket that never accepts, its accept queue filled: Linux drops a SYN to a listener whose accept
   * queue is full (tcp_conn_request: LISTENOVERFLOWS), so a connect times out as to a node that is off.
   */
  private static final class SilentPort implements AutoCloseable {
    final ServerSocketChannel socket = ServerSocketChannel.open();
    final List<Socket> fill = new ArrayList<>();

    SilentPort(InetSocketAddress address) throws IOException {
      try {
        socket.setOption(java.net.StandardSocketOptions.SO_REUSEADDR, true);
        socket.bind(address, 1);
        for (int k = 0; k < 8; k++) {
          Socket c = new Socket();
          try {
            c.connect(address, 300);
            fill.add(c);
          } catch (java.net.SocketTimeoutException e) {
            c.close();
            return; // full: SYNs are dropped from now on
          }
        }
        throw new IOException("the accept queue of " + address + " did not fill up");
      } catch (IOException | RuntimeException e) {
        close();
        throw e;
      }
    }

    @Override
    public void close() throws IOException {
      for (Socket c : fill) {
        c.close();
      }
      socket.close();
    }
  }

  private static final class FakeAgent implements AutoCloseable {
    final ServerSocket socket;
    final List<Socket> held = new java.util.concurrent.CopyOnWriteArrayList<>();
    volatile boolean silent;

    final String node;

    FakeAgent(InetSocketAddress address, String node) throws IOException {
      this.node = node;
      socket = new ServerSocket();
      socket.setReuseAddress(true);
      socket.bind(address, 64);
      Thread t = new Thread(this::serve, "agent-" + address);
      t.setDaemon(true);
      t.start();
    }

    private void serve() {
      while (!socket.isClosed()) {
        try {
          Socket c = socket.accept();
          if (silent) {
            held.add(c);
            continue;
          }
          try (c) {
            c.setSoTimeout(1000);
            c.getInputStream().read(new byte[512]);
            c.getOutputStream().write(("HTTP/1.0 200 OK\r\nEgress-Agent-Node: " + node
                + "\r\nContent-Length: 3\r\n\r\nok\n").getBytes());
          }
        } catch (IOException e) {
          // closed, or a probe that gave up
        }
      }
    }

    @Override
    public void close() throws IOException {
      socket.close();
      for (Socket c : held) {
        c.close();
      }
    }
  }

  private AllocatorRunner runner() {
    AllocatorConfig config = new AllocatorConfig(AllocatorConfig.DEFAULT_LEASE_NAME, Duration.ofSeconds(2),
        Duration.ofMillis(1500), Duration.ofMillis(200), Duration.ofSeconds(30))
        .withProbes(new HostProbes(true, port, Duration.ofMillis(500), Duration.ofSeconds(1), 4, Optional.empty(),
            new HostHealth.Settings(2, Duration.ofSeconds(30), Duration.ofSeconds(1))));
    KubernetesClient own = server.createClient();
    AllocatorRunner r = AllocatorRunner.start(own, LEASE_NS, "allocator", config);
    toClose.add(own);
    toClose.add(0, r);
    return r;
  }

  private void awaitHost(String node) {
    await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20))
        .until(() -> cluster.host("web").equals(Optional.of(node)));
  }

  @Test
  void silentHostIsDrainedAndItsServiceMovesWithinThreeSeconds() throws Exception {
    cluster.egressService("web", null, null);
    AllocatorRunner r = runner();
    awaitHost("node1");
    // let the probes of node1 start answering before it goes quiet
    await().atMost(Duration.ofSeconds(5)).until(() -> r.allocator().passes() > 0);
    Thread.sleep(1000);

    long t0 = System.nanoTime();
    silent(1);
    awaitHost("node2");
    double seconds = (System.nanoTime() - t0) / 1e9;
    assertThat(seconds).as("node1 silent -> status.host node2").isLessThan(3.0);
    assertThat(r.allocator().unreachableNodes()).containsExactly("node1");
    assertThat(r.allocator().failoverSeconds()).hasSize(1).allSatisfy(s -> assertThat(s).as("last answer -> status written").isBetween(0.5, 3.0));
    await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> assertThat(cluster.events("web"))
        .anySatisfy(e -> assertThat(e.getMessage()).startsWith("moved from node node1 (unreachable")));
  }

  @Test
  void hostAgentRestartMovesNothing() throws Exception {
    cluster.egressService("web", null, null);
    runner();
    awaitHost("node1");
    Thread.sleep(1000);
    stop(1); // connection refused: the node is up, its agent restarts
    long end = System.nanoTime() + Duration.ofSeconds(4).toNanos();
    while (System.nanoTime() < end) {
      assertThat(cluster.host("web")).contains("node1");
      Thread.sleep(100);
    }
    healthy(1);
    Thread.sleep(1000);
    assertThat(cluster.host("web")).contains("node1");
  }

  @Test
  void aStalledHostAgentMovesNothing() throws Exception {
    cluster.egressService("web", null, null);
    AllocatorRunner r = runner();
    awaitHost("node1");
    Thread.sleep(1000);
    stalled(1); // connections complete, nothing answers: the node is up, its agent is not answering
    long end = System.nanoTime() + Duration.ofSeconds(4).toNanos();
    while (System.nanoTime() < end) {
      assertThat(cluster.host("web")).contains("node1");
      Thread.sleep(100);
    }
    assertThat(r.allocator().unreachableNodes()).isEmpty();
  }

  @Test
  void aReturningNodeHostsAgainAfterRecoveringButServicesDoNotMoveBack() throws Exception {
    cluster.egressService("web", null, null);
    AllocatorRunner r = runner();
    awaitHost("node1");
    Thread.sleep(1000);
    silent(1);
    awaitHost("node2");
    healthy(1);
    await().atMost(Duration.ofSeconds(5)).until(() -> r.allocator().unreachableNodes().isEmpty());
    Thread.sleep(1000);
    assertThat(cluster.host("web")).as("no move back").contains("node2");
    // node1 is eligible again: when node2 goes quiet, the service returns to it
    silent(2);
    awaitHost("node1");
  }
}
