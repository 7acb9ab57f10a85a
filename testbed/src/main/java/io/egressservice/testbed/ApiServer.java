package io.egressservice.testbed;

import io.egressservice.ip.IpFamily;
import io.fabric8.kubernetes.api.model.LabelSelectorBuilder;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.ServiceBuilder;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointBuilder;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSliceBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceSpec;

/**
 * The cluster's Kubernetes API: fabric8's mock server in CRUD mode (no schema validation; with
 * {@code expiringWatches}, a real server's watch semantics: {@link ExpiringWatchDispatcher}), a
 * kubeconfig file for the agents, and the objects a cluster would hold, written through the real client.
 */
public final class ApiServer implements AutoCloseable {
  /** The namespace of the services the helpers create. */
  public static final String NAMESPACE = "shop";
  /** Every node carries it with its own name, so {@code nodeSelector} can pin a service to one node. */
  public static final String NODE_LABEL = "kubernetes.io/hostname";

  private final KubernetesMockServer server;
  private final KubernetesClient client;
  private final Path kubeconfig;
  private final Optional<ApiProxy> proxy;
  private final Optional<ExpiringWatchDispatcher> dispatcher;
  private final WatchHandshakeFault watchHandshakes;

  ApiServer(Path dir) {
    this(dir, false, false);
  }

  /**
   * With {@code proxied}, the kubeconfig points at an {@link ApiProxy} in front of the server, so that a test can
   * take the API away from the agents (refuse, hang) while the server keeps its state and the test's own client
   * ({@link #client()}) still reaches it.
   */
  ApiServer(Path dir, boolean proxied, boolean expiringWatches) {
    dispatcher = expiringWatches ? Optional.of(new ExpiringWatchDispatcher()) : Optional.empty();
    watchHandshakes = new WatchHandshakeFault(
        dispatcher.<KubernetesCrudDispatcher>map(d -> d).orElseGet(KubernetesCrudDispatcher::new));
    server = new KubernetesMockServer(new Context(), new MockWebServer(), new HashMap<>(),
        new VersionEndpoint(watchHandshakes), false);
    server.init();
    client = server.createClient();
    proxy = proxied ? Optional.of(new ApiProxy(server.getPort())) : Optional.empty();
    String url = proxy.map(p -> client.getMasterUrl().getProtocol() + "://127.0.0.1:" + p.port())
        .orElse(client.getMasterUrl().toString());
    kubeconfig = dir.resolve("kubeconfig");
    String config = "apiVersion: v1\n"
        + "kind: Config\n"
        + "clusters: [{name: testbed, cluster: {server: \"" + url + "\"}}]\n"
        + "users: [{name: testbed, user: {token: testbed}}]\n"
        + "contexts: [{name: testbed, context: {cluster: testbed, user: testbed, namespace: default}}]\n"
        + "current-context: testbed\n";
    try {
      Files.writeString(kubeconfig, config);
    } catch (IOException e) {
      close();
      throw new UncheckedIOException(e);
    }
  }

  public KubernetesClient client() {
    return client;
  }

  /**
   * As after a restart of a real API server: every watch resumed from a version before now is answered 410 Gone, so
   * its client must list again (only for a cluster built {@code expiringWatches()}; else a no-op).
   */
  public void expireWatchHistory() {
    dispatcher.ifPresent(ExpiringWatchDispatcher::expireHistory);
  }

  /** How many watches were answered 410 Gone so far (0 unless built {@code expiringWatches()}). */
  public long watchesGone() {
    return dispatcher.map(ExpiringWatchDispatcher::goneAnswers).orElse(0L);
  }

  /**
   * While {@code on}, every watch request's HTTP handshake is answered with status 410 Gone (not a 410 watch event):
   * a client that only reconnects from the same version never watches again; one that lists again does.
   */
  public void goneOnWatchHandshake(boolean on) {
    watchHandshakes.enabled(on);
  }

  /** How many watch handshakes {@link #goneOnWatchHandshake(boolean)} answered 410 so far. */
  public long watchHandshakesGone() {
    return watchHandshakes.answered();
  }

  /** The proxy the kubeconfig points at, when the cluster was built {@code apiThroughProxy()}. */
  public Optional<ApiProxy> proxy() {
    return proxy;
  }

  /** A kubeconfig file pointing at this server (what the agents get as {@code --kubeconfig}). */
  public Path kubeconfig() {
    return kubeconfig;
  }

  /**
   * Node {@code name} (index {@code i}): Ready, InternalIPs of both families, both pod CIDRs, its hostname label. Made
   * once per cluster, so a conflict can only be the client's own retry of a create that timed out on a loaded machine
   * (it answered 409 and failed the cluster's start): the object is written as wanted either way. Pods likewise.
   */
  void createNode(String name, int i) {
    client.nodes().resource(new NodeBuilder()
        .withNewMetadata().withName(name).addToLabels(NODE_LABEL, name).endMetadata()
        .withNewSpec().withPodCIDR(Addresses.podCidr(i, IpFamily.V4))
          .withPodCIDRs(Addresses.podCidr(i, IpFamily.V4), Addresses.podCidr(i, IpFamily.V6)).endSpec()
        .withNewStatus()
          .addNewAddress().withType("InternalIP").withAddress(Addresses.nodeIp(i, IpFamily.V4)).endAddress()
          .addNewAddress().withType("InternalIP").withAddress(Addresses.nodeIp(i, IpFamily.V6)).endAddress()
          .addNewAddress().withType("Hostname").withAddress(name).endAddress()
          .addNewCondition().withType("Ready").withStatus("True").endCondition()
        .endStatus()
        .build()).createOr(existing -> existing.update());
  }

  /** The Pod object of {@code pod}: Running on its node, with both addresses. */
  void createPod(Cluster.Pod pod) {
    client.pods().resource(new PodBuilder()
        .withNewMetadata().withName(pod.name()).withNamespace(NAMESPACE).addToLabels("app", pod.name()).endMetadata()
        .withNewSpec().withNodeName(pod.node()).addNewContainer().withName("app").withImage("app").endContainer().endSpec()
        .withNewStatus().withPhase("Running").withPodIP(pod.ip(IpFamily.V4))
          .addNewPodIP().withIp(pod.ip(IpFamily.V4)).endPodIP().addNewPodIP().withIp(pod.ip(IpFamily.V6)).endPodIP()
        .endStatus()
        .build()).createOr(existing -> existing.update());
  }

  /**
   * A dual-stack LoadBalancer Service {@code name} in {@link #NAMESPACE} with ingress IPs {@code lbIps} and one
   * EndpointSlice per family with {@code pods} as its ready endpoints (each with its nodeName and Pod targetRef).
   */
  public void createLoadBalancer(String name, String clusterIpV4, String clusterIpV6, List<String> lbIps,
      List<Cluster.Pod> pods) {
    ServiceBuilder svc = new ServiceBuilder()
        .withNewMetadata().withName(name).withNamespace(NAMESPACE).endMetadata()
        .withNewSpec().withType("LoadBalancer").withClusterIP(clusterIpV4).withClusterIPs(clusterIpV4, clusterIpV6)
          .withIpFamilies("IPv4", "IPv6").withIpFamilyPolicy("RequireDualStack")
          .addNewPort().withName("http").withPort(80).withNewTargetPort(Traffic.ECHO_PORT).withProtocol("TCP").endPort()
          .addToSelector("app", name) // its slices are then the EndpointSlice controller's, which the agents trust
        .endSpec()
        .withNewStatus().withNewLoadBalancer().endLoadBalancer().endStatus();
    for (String ip : lbIps) {
      svc.editStatus().editLoadBalancer().addNewIngress().withIp(ip).endIngress().endLoadBalancer().endStatus();
    }
    client.services().resource(svc.build()).create();
    setEndpoints(name, pods);
  }

  /** Replaces the service's EndpointSlices (one per family) with {@code pods}. */
  public void setEndpoints(String service, List<Cluster.Pod> pods) {
    for (IpFamily f : IpFamily.values()) {
      List<io.fabric8.kubernetes.api.model.discovery.v1.Endpoint> endpoints = new ArrayList<>();
      for (Cluster.Pod p : pods) {
        endpoints.add(new EndpointBuilder().withAddresses(p.ip(f)).withNodeName(p.node())
            .withNewConditions().withReady(true).endConditions()
            .withNewTargetRef().withKind("Pod").withNamespace(NAMESPACE).withName(p.name()).endTargetRef()
            .build());
      }
      client.discovery().v1().endpointSlices().resource(new EndpointSliceBuilder()
          .withNewMetadata().withName(service + "-" + (f == IpFamily.V4 ? "v4" : "v6")).withNamespace(NAMESPACE)
            .addToLabels("kubernetes.io/service-name", service)
            .addToLabels("endpointslice.kubernetes.io/managed-by", "endpointslice-controller.k8s.io").endMetadata()
          .withAddressType(f == IpFamily.V4 ? "IPv4" : "IPv6")
          .withEndpoints(endpoints)
          .addNewPort().withName("http").withPort(Traffic.ECHO_PORT).withProtocol("TCP").endPort()
          .build()).createOr(existing -> existing.update());
    }
  }

  /**
   * Creates (or replaces the spec of) EgressService {@code name}: {@code sourceIPBy}, {@code network} (empty for
   * none) and, when given, a nodeSelector on {@link #NODE_LABEL} = {@code node}. No status: the allocator of the
   * agents writes {@code status.host}.
   */
  public EgressService applyEgressService(String name, EgressServiceSpec.SourceIPBy mode, String network,
      Optional<String> node) {
    EgressServiceSpec spec = new EgressServiceSpec();
    spec.setSourceIPBy(mode);
    spec.setNetwork(network.isEmpty() ? null : network);
    node.ifPresent(n -> spec.setNodeSelector(new LabelSelectorBuilder().addToMatchLabels(NODE_LABEL, n).build()));
    var resource = client.resources(EgressService.class).inNamespace(NAMESPACE).withName(name);
    if (resource.get() == null) {
      EgressService es = new EgressService();
      es.getMetadata().setName(name);
      es.getMetadata().setNamespace(NAMESPACE);
      es.setSpec(spec);
      return client.resources(EgressService.class).resource(es).create();
    }
    return resource.edit(es -> {
      es.setSpec(spec);
      return es;
    });
  }

  /** {@code status.host} of EgressService {@code name}, empty when it has none (or does not exist). */
  public Optional<String> host(String name) {
    EgressService es = client.resources(EgressService.class).inNamespace(NAMESPACE).withName(name).get();
    return es == null || es.getStatus() == null ? Optional.empty()
        : Optional.ofNullable(es.getStatus().getHost()).filter(h -> !h.isEmpty());
  }

  public void deleteEgressService(String name) {
    client.resources(EgressService.class).inNamespace(NAMESPACE).withName(name).delete();
  }

  /** The labels of node {@code name} (null values, the mock's way of deleting by merge patch, left out). */
  public Map<String, String> labels(String name) {
    Map<String, String> out = new HashMap<>();
    Map<String, String> labels = client.nodes().withName(name).get().getMetadata().getLabels();
    if (labels != null) {
      labels.forEach((k, v) -> {
        if (v != null) {
          out.put(k, v);
        }
      });
    }
    return out;
  }

  @Override
  public void close() {
    proxy.ifPresent(ApiProxy::close);
    dispatcher.ifPresent(ExpiringWatchDispatcher::close);
    if (client != null) {
      client.close();
    }
    server.destroy();
  }
}
