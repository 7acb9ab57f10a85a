package io.egressservice.k3s;

import io.egressservice.kernel.linux.LinuxKernel;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.egressservice.allocator.AllocatorConfig;
import io.egressservice.allocator.AllocatorRunner;
import io.egressservice.controller.KubernetesEvents;
import io.egressservice.controller.NodeAgent;
import io.egressservice.dataplane.Dataplane;
import io.egressservice.metrics.AgentMetrics;
import io.egressservice.objects.EgressServices;
import io.egressservice.plan.EndpointSliceInfo;
import io.egressservice.model.EndpointTrust;
import io.egressservice.model.PlanConfig;
import io.egressservice.testing.Netns;
import io.egressservice.testing.Privileges;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeCondition;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServiceBuilder;
import io.fabric8.kubernetes.api.model.authentication.TokenRequest;
import io.fabric8.kubernetes.api.model.authentication.TokenRequestBuilder;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointBuilder;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSliceBuilder;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceSpec.SourceIPBy;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.k3s.K3sContainer;
import org.testcontainers.utility.DockerImageName;

/**
 * The agent against a real API server: K3s in Docker (Testcontainers), the CRD and the RBAC installed from
 * {@code deploy/}, the node agent and the allocator authenticating only as the {@code egress-service-agent}
 * ServiceAccount (a TokenRequest token, no client certificate), the k3s node as the host, and the kernel side
 * in a throwaway network namespace on the test machine.
 *
 * <p>Needs a Docker engine (the GitHub Actions job has one) and root (network namespaces); skips with the
 * reason otherwise, unless {@code EGRESS_K3S_REQUIRED=true} (set in CI), where a missing Docker engine fails.
 * Nothing Docker-related runs before the assumption: the container is created in the test.
 */
class K3sIntegrationTest {
  static final String K3S_IMAGE = "rancher/k3s:v1.31.4-k3s1";
  static final String AGENT_NS = "egress-service-agent";
  static final String SERVICE_ACCOUNT = "egress-service-agent";
  static final String ALLOCATOR_ACCOUNT = "egress-service-allocator";
  static final String NS = "default";
  static final String CRD = "egressservices.k8s.ovn.org";
  static final String NETWORK = "100";
  static final String LB_IP = "203.0.113.10";
  /**
   * The Service has no selector (no pods run here), so its slice is hand-made: it carries a manager of its own,
   * which the agent and the allocator are told to trust, as an admin would for a selector-less Service.
   */
  static final String TEST_MANAGER = "egress-service-agent.test";
  static final EndpointTrust TRUST = new EndpointTrust(java.util.Set.of(TEST_MANAGER));
  static final Duration WAIT = Duration.ofSeconds(60);

  final List<AutoCloseable> toClose = new ArrayList<>();
  KubernetesClient admin;
  KubernetesClient agentClient;
  Netns ns;

  @BeforeEach
  void requireDockerAndRoot() {
    boolean docker = dockerAvailable();
    String reason = "K3sIntegrationTest needs a running Docker engine for Testcontainers' K3s module"
        + " and none answered (DOCKER_HOST, /var/run/docker.sock); it runs in CI (.github/workflows/ci.yml)";
    if (!docker && "true".equals(System.getenv("EGRESS_K3S_REQUIRED"))) {
      throw new IllegalStateException(reason + "; EGRESS_K3S_REQUIRED=true forbids skipping");
    }
    if (!docker) {
      System.err.println("SKIPPED " + reason);
    }
    Assumptions.assumeTrue(docker, reason);
    Privileges.assumeNetAdmin();
  }

  private static boolean dockerAvailable() {
    try {
      return DockerClientFactory.instance().isDockerAvailable();
    } catch (RuntimeException | LinkageError e) {
      return false;
    }
  }

  @AfterEach
  void tearDown() throws Exception {
    for (int i = toClose.size() - 1; i >= 0; i--) {
      try {
        toClose.get(i).close();
      } catch (Exception e) {
        System.err.println("K3sIntegrationTest: close failed: " + e);
      }
    }
  }

  @Test
  @Timeout(value = 10, unit = TimeUnit.MINUTES)
  void theAgentRunningAsItsServiceAccountProgramsTheKernelFromARealApiServer() throws Exception {
    K3sContainer k3s = new K3sContainer(DockerImageName.parse(K3S_IMAGE));
    toClose.add(k3s);
    k3s.start();

    Config adminConfig = Config.fromKubeconfig(k3s.getKubeConfigYaml());
    admin = new KubernetesClientBuilder().withConfig(adminConfig).build();
    toClose.add(admin);

    // The install manifests, as `kubectl apply -k deploy/` would apply them (minus the DaemonSet).
    apply("deploy/crds/egressservices.k8s.ovn.org.yaml");
    admin.apiextensions().v1().customResourceDefinitions().withName(CRD).waitUntilCondition(
        crd -> crd != null && crd.getStatus() != null && crd.getStatus().getConditions().stream()
            .anyMatch(c -> "Established".equals(c.getType()) && "True".equals(c.getStatus())),
        WAIT.toSeconds(), TimeUnit.SECONDS);
    apply("deploy/namespace.yaml");
    apply("deploy/serviceaccount.yaml");
    apply("deploy/rbac.yaml");

    // Clients that authenticate only with each ServiceAccount's token: same server, same CA. The node agent
    // (the DaemonSet's account) and the allocator (the Deployment's) each run as their own.
    agentClient = clientAs(adminConfig, SERVICE_ACCOUNT);
    KubernetesClient allocatorClient = clientAs(adminConfig, ALLOCATOR_ACCOUNT);
    // It is the ServiceAccount and nothing more: outside the ClusterRole it is forbidden.
    assertThatThrownBy(() -> agentClient.secrets().inNamespace(NS).list())
        .isInstanceOfSatisfying(KubernetesClientException.class, e -> {
          assertThat(e.getCode()).isEqualTo(403);
          assertThat(e.getMessage()).contains("system:serviceaccount:" + AGENT_NS + ":" + SERVICE_ACCOUNT);
        });

    // k3s's own node: Ready, with a pod CIDR.
    Node node = await().atMost(WAIT).until(() -> admin.nodes().list().getItems().stream()
        .filter(n -> n.getSpec().getPodCIDR() != null && isReady(n)).findFirst(), Optional::isPresent).orElseThrow();
    String nodeName = node.getMetadata().getName();
    String podCidr = node.getSpec().getPodCIDR();
    // Least privilege: every node's pod can no longer label Nodes (nor write status.host, below).
    assertThatThrownBy(() -> agentClient.nodes().withName(nodeName).patch(
        io.fabric8.kubernetes.client.dsl.base.PatchContext.of(io.fabric8.kubernetes.client.dsl.base.PatchType.JSON_MERGE),
        "{\"metadata\":{\"labels\":{\"egress-service-agent.test/forbidden\":\"\"}}}"))
        .isInstanceOfSatisfying(KubernetesClientException.class, e -> assertThat(e.getCode()).isEqualTo(403));
    String ep1 = addressIn(podCidr, 200);
    String ep2 = addressIn(podCidr, 201);

    // A LoadBalancer Service that no LB controller owns (k3s's servicelb and the service controller skip a
    // foreign loadBalancerClass), its ingress IP written through the status subresource; endpoints on the node.
    admin.services().inNamespace(NS).resource(new ServiceBuilder()
        .withNewMetadata().withName("web").withNamespace(NS).endMetadata()
        .withNewSpec().withType("LoadBalancer").withLoadBalancerClass("egress-service-agent.test/none")
          .addNewPort().withName("http").withProtocol("TCP").withPort(80).endPort().endSpec()
        .build()).create();
    admin.services().inNamespace(NS).withName("web").editStatus(s -> new ServiceBuilder(s)
        .editOrNewStatus().withNewLoadBalancer().addNewIngress().withIp(LB_IP).endIngress().endLoadBalancer().endStatus()
        .build());
    Service web = admin.services().inNamespace(NS).withName("web").get();
    String clusterIp = web.getSpec().getClusterIP();
    assertThat(web.getStatus().getLoadBalancer().getIngress()).singleElement()
        .satisfies(i -> assertThat(i.getIp()).isEqualTo(LB_IP));
    admin.discovery().v1().endpointSlices().inNamespace(NS).resource(slice("web", "web-1", nodeName, ep1, ep2)).create();
    admin.resources(EgressService.class).inNamespace(NS)
        .resource(EgressServices.of(NS, "web", SourceIPBy.LOADBALANCERIP, NETWORK, "")).create();

    // The agent and the allocator, each as its own ServiceAccount; the allocator chooses the host.
    Privileges.assumeNetAdmin();
    ns = Netns.create("k3s");
    toClose.add(ns);
    Dataplane dataplane = Dataplane.open(LinuxKernel.open(Optional.of(ns.name())), 5000, 201);
    toClose.add(dataplane);
    EgressService created = admin.resources(EgressService.class).inNamespace(NS).withName("web").get();
    assertThatThrownBy(() -> agentClient.resource(created).updateStatus())
        .isInstanceOfSatisfying(KubernetesClientException.class, e -> assertThat(e.getCode()).isEqualTo(403));
    toClose.add(AllocatorRunner.start(allocatorClient, AGENT_NS, "k3s-it-allocator",
        new AllocatorConfig(AllocatorConfig.DEFAULT_LEASE_NAME, Duration.ofSeconds(4), Duration.ofSeconds(3),
            Duration.ofMillis(500), Duration.ofSeconds(30)).withEndpointTrust(TRUST)));
    NodeAgent agent = new NodeAgent(agentClient, dataplane,
        new NodeAgent.Settings(nodeName, PlanConfig.defaults().withEndpointTrust(TRUST), Duration.ofSeconds(30),
            Duration.ofSeconds(2)),
        new AgentMetrics(), new KubernetesEvents(agentClient, nodeName, Clock.systemUTC()), Clock.systemUTC());
    toClose.add(agent);
    agent.start();

    await().atMost(WAIT).untilAsserted(() -> assertThat(host()).isEqualTo(nodeName));
    await().atMost(WAIT).untilAsserted(() -> assertThat(admin.nodes().withName(nodeName).get().getMetadata().getLabels())
        .containsKey("egress-service.k8s.ovn.org/" + NS + "-web"));
    await().atMost(WAIT).untilAsserted(() -> assertThat(rules())
        .contains("5000:\tfrom " + ep1 + " lookup " + NETWORK + " proto 201")
        .contains("5000:\tfrom " + ep2 + " lookup " + NETWORK + " proto 201")
        .contains("5000:\tfrom " + clusterIp + " lookup " + NETWORK + " proto 201"));
    await().atMost(WAIT).untilAsserted(() -> assertThat(snat())
        .contains(ep1 + " comment \"" + NS + "/web\" : " + LB_IP)
        .contains(ep2 + " comment \"" + NS + "/web\" : " + LB_IP));
    await().atMost(WAIT).until(() -> agent.readiness().ok());
    await().atMost(WAIT).untilAsserted(() -> assertThat(admin.v1().events().inNamespace(NS).list().getItems())
        .anySatisfy(e -> {
          assertThat(e.getReason()).isEqualTo("EgressConfigured");
          assertThat(e.getInvolvedObject().getName()).isEqualTo("web");
        }));

    admin.resources(EgressService.class).inNamespace(NS).withName("web").delete();

    await().atMost(WAIT).untilAsserted(() -> assertThat(rules()).doesNotContain("proto 201"));
    await().atMost(WAIT).untilAsserted(() -> assertThat(snat()).doesNotContain(LB_IP));
  }

  private KubernetesClient clientAs(Config adminConfig, String account) {
    TokenRequest token = admin.serviceAccounts().inNamespace(AGENT_NS).withName(account).tokenRequest(
        new TokenRequestBuilder().withNewSpec().withExpirationSeconds(3600L).endSpec().build());
    assertThat(token.getStatus().getToken()).isNotBlank();
    KubernetesClient c = new KubernetesClientBuilder().withConfig(new ConfigBuilder(Config.empty())
        .withMasterUrl(adminConfig.getMasterUrl())
        .withCaCertData(adminConfig.getCaCertData())
        .withOauthToken(token.getStatus().getToken())
        .build()).build();
    toClose.add(c);
    return c;
  }

  private void apply(String file) throws IOException {
    try (InputStream in = Files.newInputStream(Path.of(file))) {
      admin.load(in).serverSideApply();
    }
  }

  private String host() {
    EgressService es = admin.resources(EgressService.class).inNamespace(NS).withName("web").get();
    return es == null || es.getStatus() == null || es.getStatus().getHost() == null ? "" : es.getStatus().getHost();
  }

  private String rules() {
    return ns.exec("ip", "rule", "show");
  }

  private String snat() {
    Netns.Result r = ns.tryExec("nft", "list", "map", "inet", "egress_service_agent", "snat_v4");
    return r.exitCode() == 0 ? r.stdout() : "";
  }

  private static boolean isReady(Node n) {
    if (n.getStatus() == null || n.getStatus().getConditions() == null) {
      return false;
    }
    for (NodeCondition c : n.getStatus().getConditions()) {
      if ("Ready".equals(c.getType())) {
        return "True".equals(c.getStatus());
      }
    }
    return false;
  }

  /** The {@code offset}-th address of an IPv4 prefix (k3s's default pod CIDR is an IPv4 /24). */
  static String addressIn(String cidr, int offset) throws UnknownHostException {
    String[] parts = cidr.split("/");
    byte[] base = InetAddress.getByName(parts[0]).getAddress();
    assertThat(base).as("IPv4 pod CIDR expected, got %s", cidr).hasSize(4);
    assertThat(Integer.parseInt(parts[1])).as("pod CIDR %s too small", cidr).isLessThanOrEqualTo(24);
    int value = ByteBuffer.wrap(base).getInt() + offset;
    return InetAddress.getByAddress(ByteBuffer.allocate(4).putInt(value).array()).getHostAddress();
  }

  static EndpointSlice slice(String service, String sliceName, String node, String... addresses) {
    return new EndpointSliceBuilder()
        .withNewMetadata().withName(sliceName).withNamespace(NS)
          .addToLabels("kubernetes.io/service-name", service)
          .addToLabels(EndpointSliceInfo.MANAGED_BY_LABEL, TEST_MANAGER).endMetadata()
        .withAddressType("IPv4")
        .withEndpoints(List.of(addresses).stream()
            .map(a -> new EndpointBuilder().withAddresses(a).withNodeName(node)
                .withNewConditions().withReady(true).endConditions().build()).toList())
        .build();
  }
}
