package io.egressservice.rbac;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MappingIterator;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import io.egressservice.allocator.AllocatorConfig;
import io.egressservice.allocator.AllocatorRunner;
import io.egressservice.controller.KubernetesEvents;
import io.egressservice.controller.NodeAgent;
import io.egressservice.dataplane.Dataplane;
import io.egressservice.metrics.AgentMetrics;
import io.egressservice.objects.EgressServices;
import io.egressservice.plan.PlanConfig;
import io.egressservice.testing.Netns;
import io.egressservice.testing.Privileges;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.ServiceBuilder;
import io.fabric8.kubernetes.api.model.apiextensions.v1.CustomResourceDefinition;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointBuilder;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSliceBuilder;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.http.RecordedRequest;
import java.io.FileInputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceSpec.SourceIPBy;

/**
 * Every request the node agent and the allocator send to the API server is allowed by the RBAC in
 * {@code deploy/rbac.yaml}. The agent's client is told apart from the test's by its User-Agent.
 */
@EnableKubernetesMockClient(crud = true)
class RbacCoverageTest {
  static final String AGENT_UA = "egress-service-agent-under-test";
  static final String AGENT_NAMESPACE = "egress-service-agent";

  KubernetesMockServer server;
  KubernetesClient client;

  /** verb group/resource[/subresource] [namespace of a namespaced Role, or "*" for the ClusterRole]. */
  record Permission(String verb, String group, String resource, String namespace) {}

  @Test
  void everyRequestOfTheAgentAndTheAllocatorIsAllowedByTheDeployedRoles() throws Exception {
    Privileges.assumeNetAdmin();
    try (FileInputStream in = new FileInputStream("crds/egressservices.k8s.ovn.org.yaml")) {
      CustomResourceDefinition crd = client.apiextensions().v1().customResourceDefinitions().load(in).item();
      client.resource(crd).create();
    }
    Config agentConfig = new ConfigBuilder(client.getConfiguration()).withUserAgent(AGENT_UA).build();
    List<AutoCloseable> closing = new ArrayList<>();
    try (Netns ns = Netns.create("rbac");
        KubernetesClient agentClient = new KubernetesClientBuilder().withConfig(agentConfig).build();
        Dataplane dp = Dataplane.open(Optional.of(ns.name()), 5000, 201)) {
      client.nodes().resource(new NodeBuilder().withNewMetadata().withName("node-a").endMetadata()
          .withNewSpec().withPodCIDRs("10.128.0.0/24").endSpec()
          .withNewStatus().addNewAddress().withType("InternalIP").withAddress("192.168.1.10").endAddress()
            .addNewCondition().withType("Ready").withStatus("True").endCondition().endStatus().build()).create();
      client.services().resource(new ServiceBuilder().withNewMetadata().withName("web").withNamespace("default")
          .endMetadata().withNewSpec().withType("LoadBalancer").withClusterIP("172.30.0.10").endSpec()
          .withNewStatus().withNewLoadBalancer().addNewIngress().withIp("5.5.5.5").endIngress().endLoadBalancer()
          .endStatus().build()).create();
      client.discovery().v1().endpointSlices().resource(new EndpointSliceBuilder().withNewMetadata()
          .withName("web-1").withNamespace("default").addToLabels("kubernetes.io/service-name", "web").endMetadata()
          .withAddressType("IPv4").withEndpoints(new EndpointBuilder().withAddresses("10.128.0.5").withNodeName("node-a")
              .build()).build()).create();
      client.resources(EgressService.class)
          .resource(EgressServices.of("default", "web", SourceIPBy.LOADBALANCERIP, "100", "")).create();
      client.resources(EgressService.class)
          .resource(EgressServices.of("default", "lost", SourceIPBy.LOADBALANCERIP, "no-such-net", "")).create();

      NodeAgent agent = new NodeAgent(agentClient, dp,
          new NodeAgent.Settings("node-a", PlanConfig.defaults(), Duration.ofSeconds(1), Duration.ofSeconds(1)),
          new AgentMetrics(), new KubernetesEvents(agentClient, "node-a", Clock.systemUTC()), Clock.systemUTC());
      agent.start();
      closing.add(agent);
      closing.add(AllocatorRunner.start(agentClient, AGENT_NAMESPACE, "rbac-test",
          new AllocatorConfig(AllocatorConfig.DEFAULT_LEASE_NAME, Duration.ofSeconds(2), Duration.ofMillis(1500),
              Duration.ofMillis(200), Duration.ofSeconds(1))));

      await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
        assertThat(ns.exec("ip", "rule", "show")).contains("from 10.128.0.5 lookup 100 proto 201");
        assertThat(client.v1().events().inNamespace("default").list().getItems()).isNotEmpty();
      });
      client.resources(EgressService.class).inNamespace("default").withName("web").delete();
      await().atMost(Duration.ofSeconds(20))
          .untilAsserted(() -> assertThat(ns.exec("ip", "rule", "show")).doesNotContain("proto 201"));
    } finally {
      for (int i = closing.size() - 1; i >= 0; i--) {
        closing.get(i).close();
      }
    }

    List<Permission> allowed = permissions(Path.of("deploy/rbac.yaml"));
    Set<String> used = new TreeSet<>();
    Set<String> denied = new TreeSet<>();
    RecordedRequest request;
    while ((request = server.takeRequest(10, TimeUnit.MILLISECONDS)) != null) {
      if (!AGENT_UA.equals(request.getHeader("User-Agent"))) {
        continue;
      }
      Permission needed = needed(request.getMethod(), request.getPath());
      used.add(needed.toString());
      if (allowed.stream().noneMatch(p -> grants(p, needed))) {
        denied.add(request.getMethod() + " " + request.getPath() + " needs " + needed);
      }
    }
    System.out.println("requests the agent made, by permission: " + used);
    assertThat(used).as("the test must see the agent's requests").hasSizeGreaterThan(8);
    assertThat(denied).as("requests not allowed by deploy/rbac.yaml").isEmpty();
  }

  static boolean grants(Permission rule, Permission needed) {
    return rule.verb().equals(needed.verb()) && rule.group().equals(needed.group())
        && rule.resource().equals(needed.resource())
        && (rule.namespace().equals("*") || rule.namespace().equals(needed.namespace()));
  }

  /** The verb, API group, resource(/subresource) and namespace an API request needs. */
  static Permission needed(String method, String pathAndQuery) {
    String path = pathAndQuery.split("\\?", 2)[0];
    boolean watch = pathAndQuery.contains("watch=true");
    String[] parts = path.replaceFirst("^/", "").split("/");
    int i;
    String group;
    if (parts[0].equals("api")) {
      group = "";
      i = 2;
    } else {
      group = parts[1];
      i = 3;
    }
    String namespace = "";
    if (i < parts.length && parts[i].equals("namespaces") && i + 2 < parts.length) {
      namespace = parts[i + 1];
      i += 2;
    }
    String resource = parts[i];
    boolean named = i + 1 < parts.length;
    if (i + 2 < parts.length) {
      resource += "/" + parts[i + 2];
    }
    String verb = switch (method) {
      case "GET" -> watch ? "watch" : named ? "get" : "list";
      case "POST" -> "create";
      case "PUT" -> "update";
      case "PATCH" -> "patch";
      case "DELETE" -> "delete";
      default -> method.toLowerCase(java.util.Locale.ROOT);
    };
    return new Permission(verb, group, resource, namespace);
  }

  /** Every (verb, group, resource) the ClusterRoles ("*") and Roles (their namespace) of the file grant. */
  static List<Permission> permissions(Path rbac) throws Exception {
    List<Permission> out = new ArrayList<>();
    try (MappingIterator<JsonNode> docs = new YAMLMapper().readerFor(JsonNode.class).readValues(Files.readString(rbac))) {
      while (docs.hasNextValue()) {
        JsonNode doc = docs.nextValue();
        String kind = doc.path("kind").asText();
        if (!kind.equals("ClusterRole") && !kind.equals("Role")) {
          continue;
        }
        String namespace = kind.equals("Role") ? doc.path("metadata").path("namespace").asText() : "*";
        for (JsonNode rule : doc.path("rules")) {
          for (JsonNode g : rule.path("apiGroups")) {
            for (JsonNode r : rule.path("resources")) {
              for (JsonNode v : rule.path("verbs")) {
                out.add(new Permission(v.asText(), g.asText(), r.asText(), namespace));
              }
            }
          }
        }
      }
    }
    return out;
  }
}
