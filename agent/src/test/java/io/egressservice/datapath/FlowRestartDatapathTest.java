package io.egressservice.datapath;

import io.egressservice.cli.KernelPlan;
import io.egressservice.kernel.linux.LinuxKernel;
import static io.egressservice.testing.LineSockets.ask;
import static io.egressservice.testing.LineSockets.read;
import static io.egressservice.testing.LineSockets.reader;
import static io.egressservice.testing.LineSockets.say;
import static io.egressservice.datapath.Topology.EXTERNAL;
import static io.egressservice.datapath.Topology.LB_IP;
import static io.egressservice.datapath.Topology.LB_IP_2;
import static io.egressservice.datapath.Topology.NODE2_POD;
import static io.egressservice.datapath.Topology.POD1;
import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.dataplane.ApplyReport;
import io.egressservice.dataplane.Dataplane;
import io.egressservice.ip.IpPrefix;
import io.egressservice.netlink.NetnsThread;
import io.egressservice.objects.ObjectFiles;
import io.egressservice.plan.DesiredState;
import io.egressservice.model.ObjectRef;
import io.egressservice.model.PlanConfig;
import io.egressservice.model.RuleMode;
import java.io.BufferedReader;
import java.io.IOException;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The conntrack restart of a changed endpoint with real packets: one long-lived dataplane (as
 * the agent keeps it) reconciles the node twice, and between the two the service's LB IP changes, so pod1's
 * treatment changes. pod1 holds a TCP connection through a ClusterIP (DNAT in the node's nft, as kube-proxy would)
 * to a pod on node2, and a UDP flow to an external host. The external flow must start over (the external host sees
 * the new LB IP); the in-cluster connection must not notice.
 */
class FlowRestartDatapathTest extends TopologyCase {
  static final String CLUSTER_IP = "172.30.0.20";
  static final int CLUSTER_PORT = 80;
  static final int BACKEND_PORT = 7100;

  DesiredState last;

  /** Rule mode, and whether the change goes through the fast path (as the agent applies one service's change). */
  static Stream<Arguments> ways() {
    return Stream.of(Arguments.of("source", false), Arguments.of("mark", false), Arguments.of("source", true),
        Arguments.of("mark", true));
  }

  @BeforeEach
  void setUp() {
    topo.chain("node", "ip esa_test_cluster_ip", "nat", "prerouting", "dstnat",
        "ip daddr " + CLUSTER_IP + " tcp dport " + CLUSTER_PORT + " dnat to " + NODE2_POD + ":" + BACKEND_PORT);
  }

  @ParameterizedTest(name = "rule mode {0}, fast path {1}")
  @MethodSource("ways")
  void treatmentChangeKeepsTheEndpointsInClusterConnectionsAndRestartsItsExternalFlows(String ruleMode, boolean fast)
      throws IOException {
    PlanConfig config = PlanConfig.defaults()
        .withCidrs(List.of(IpPrefix.parse("10.128.0.0/16")), List.of(IpPrefix.parse("172.30.0.0/16")), List.of())
        .withRuleMode(RuleMode.fromFlag(ruleMode), PlanConfig.DEFAULT_MARK_MASK);
    try (Dataplane dp = Dataplane.open(LinuxKernel.open(Optional.of(topo.node().name())), config.priority(), config.ruleProtocol());
        NetnsThread pod1 = NetnsThread.enter(Optional.of(topo.ns("pod1").name()));
        NetnsThread node2 = NetnsThread.enter(Optional.of(topo.ns("node2").name()));
        ServerSocket backend = node2.call(() -> listen(NODE2_POD, BACKEND_PORT));
        DatagramSocket external = pod1.call(DatagramSocket::new)) {
      reconcile(dp, config, LB_IP, false);
      external.setSoTimeout(500);
      external.connect(InetAddress.getByName(EXTERNAL), Topology.PORT);
      assertThat(ask(external)).as("the external flow before the change").contains("saw " + LB_IP + " at up2");
      try (Socket client = pod1.call(() -> connect(CLUSTER_IP, CLUSTER_PORT));
          Socket served = backend.accept()) {
        served.setSoTimeout(2000);
        BufferedReader fromServer = reader(client);
        BufferedReader fromClient = reader(served);
        say(served, "one");
        assertThat(fromServer.readLine()).as("through the ClusterIP before the change").isEqualTo("one");

        reconcile(dp, config, LB_IP_2, fast);
        assertThat(dp.fastPathStats().fastPaths()).as("changes through the fast path").isEqualTo(fast ? 1 : 0);

        say(served, "two");
        assertThat(read(fromServer)).as("the backend's next line, through the ClusterIP, after the change")
            .contains("two");
        say(client, "three");
        assertThat(read(fromClient)).as("the client's next line at the backend, after the change").contains("three");
      }
      assertThat(ask(external)).as("the same external flow after the change: started over with the new LB IP")
          .contains("saw " + LB_IP_2 + " at up2");
    }
  }

  /** Reconciles the node to service web with {@code lbIp}: in full, or on the fast path from the last state. */
  private void reconcile(Dataplane dp, PlanConfig config, String lbIp, boolean fast) {
    Path file = ParityDatapathTest.write(tmp.resolve("step-" + (++step)), ParityDatapathTest.service("web",
        "LoadBalancerIP", "100", "node", "Cluster", List.of(lbIp), List.of("172.30.0.10"), List.of(POD1)));
    try {
      DesiredState next = KernelPlan.of(dp, ObjectFiles.load(List.of(file), note -> {}), "node", config).desired();
      ApplyReport report = fast ? dp.reconcileChanged(last, next, Set.of(new ObjectRef("default", "web")))
          : dp.reconcile(next);
      last = next;
      assertThat(report.failures()).as("reconcile with LB IP %s", lbIp).isEmpty();
    } catch (io.egressservice.objects.ObjectsException e) {
      throw new IllegalStateException(e);
    }
  }

  private static ServerSocket listen(String address, int port) throws IOException {
    ServerSocket s = new ServerSocket();
    s.setReuseAddress(true);
    s.bind(new InetSocketAddress(InetAddress.getByName(address), port), 4);
    s.setSoTimeout(2000);
    return s;
  }

  private static Socket connect(String address, int port) throws IOException {
    Socket s = new Socket();
    try {
      s.connect(new InetSocketAddress(InetAddress.getByName(address), port), 2000);
      s.setSoTimeout(2000);
      return s;
    } catch (IOException e) {
      s.close();
      throw e;
    }
  }
}
