package io.egressservice.rbac;

import io.egressservice.kernel.linux.LinuxKernel;
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
import io.egressservice.model.PlanConfig;
import io.egressservice.testing.MockApiObjects;
import io.egressservice.testing.Netns;
import io.egressservice.testing.NetnsFixture;
import io.egressservice.uninstall.Owner;
import io.egressservice.uninstall.OwnerWatch;
import io.egressservice.uninstall.Uninstall;
import io.fabric8.kubernetes.api.model.StatusBuilder;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.http.RecordedRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceSpec.SourceIPBy;

/**
 * Each ServiceAccount of {@code deploy/rbac.yaml} holds exactly what the code of its process calls: the node
 * agent (DaemonSet, {@code run --allocator=false}) and the allocator (Deployment, {@code allocator}) run against
 * the mock API server, each with a client of its own told apart by its User-Agent; every request is mapped to
 * the permission it needs. Nothing they send may be denied, and nothing granted may go unused (the
 * DaemonSet's account held {@code nodes: patch} and {@code egressservices/status} that only the
 * allocator uses, and {@code events.k8s.io} and {@code patch} on Events that nothing uses).
 */
@EnableKubernetesMockClient(crud = true)
class RbacCoverageTest {
  static final String AGENT_NAMESPACE = "egress-service-agent";
  static final String NODE_AGENT_ACCOUNT = "egress-service-agent";
  static final String ALLOCATOR_ACCOUNT = "egress-service-allocator";
  /** User-Agent of each process's client -> the ServiceAccount its pods run as. */
  static final Map<String, String> ACCOUNT_BY_USER_AGENT = Map.of(
      "node-agent-under-test", NODE_AGENT_ACCOUNT,
      "allocator-under-test", ALLOCATOR_ACCOUNT);

  KubernetesMockServer server;
  KubernetesClient client;
  @RegisterExtension
  final NetnsFixture kernel = new NetnsFixture("rbac");

  /**
   * verb group/resource[/subresource] [namespace of a namespaced Role, or "*" for a ClusterRole] [name: a rule's
   * resourceName, or the object a request names, by its path or a metadata.name field selector; "" for none].
   */
  record Permission(String verb, String group, String resource, String namespace, String name) {
    Permission(String verb, String group, String resource, String namespace) {
      this(verb, group, resource, namespace, "");
    }

    @Override
    public String toString() {
      return verb + " " + (group.isEmpty() ? "core" : group) + "/" + resource + (namespace.equals("*") ? "" : " in " + namespace)
          + (name.isEmpty() ? "" : " named " + name);
    }
  }

  @Test
  void eachAccountHoldsExactlyWhatItsProcessCalls() throws Exception {
    MockApiObjects.installCrd(client);
    // The mock never answers 409 to a status PUT: one is injected, so the allocator's re-read runs too.
    server.expect().put().withPath("/apis/k8s.ovn.org/v1/namespaces/default/egressservices/web/status")
        .andReturn(409, new StatusBuilder().withCode(409).withReason("Conflict")
            .withMessage("the object has been modified").build())
        .once();
    Netns ns = kernel.ns();
    KubernetesClient agentClient = kernel.closeLater(clientAs("node-agent-under-test"));
    KubernetesClient allocatorClient = kernel.closeLater(clientAs("allocator-under-test"));
    Dataplane dp = kernel.closeLater(Dataplane.open(LinuxKernel.open(Optional.of(ns.name())), 5000, 201));
    // The processes stop before their requests are read, so that what they send on the way out is checked too.
    List<AutoCloseable> closing = new ArrayList<>();
    // Their own workloads, which each watches to tell an uninstall from a restart (egress-service-*-uninstall).
    client.apps().daemonSets().inNamespace(AGENT_NAMESPACE).resource(new io.fabric8.kubernetes.api.model.apps
        .DaemonSetBuilder().withNewMetadata().withName(NODE_AGENT_ACCOUNT).endMetadata().build()).create();
    client.apps().deployments().inNamespace(AGENT_NAMESPACE).resource(new io.fabric8.kubernetes.api.model.apps
        .DeploymentBuilder().withNewMetadata().withName(ALLOCATOR_ACCOUNT).endMetadata().build()).create();
    OwnerWatch agentOwner = kernel.closeLater(OwnerWatch.start(agentClient,
        new Owner(Owner.Kind.DAEMONSET, AGENT_NAMESPACE, NODE_AGENT_ACCOUNT)));
    OwnerWatch allocatorOwner = kernel.closeLater(OwnerWatch.start(allocatorClient,
        new Owner(Owner.Kind.DEPLOYMENT, AGENT_NAMESPACE, ALLOCATOR_ACCOUNT)));
    try {
      MockApiObjects.readyNodeA(client);
      MockApiObjects.lbServiceOnNodeA(client, "web", "172.30.0.10", "5.5.5.5", "10.128.0.5");
      client.resources(EgressService.class)
          .resource(EgressServices.of("default", "web", SourceIPBy.LOADBALANCERIP, "100", "")).create();
      client.resources(EgressService.class)
          .resource(EgressServices.of("default", "lost", SourceIPBy.LOADBALANCERIP, "no-such-net", "")).create();

      // As the DaemonSet runs it: run --allocator=false (the node agent alone).
      NodeAgent agent = new NodeAgent(agentClient, dp,
          new NodeAgent.Settings("node-a", PlanConfig.defaults(), Duration.ofSeconds(1), Duration.ofSeconds(1)),
          new AgentMetrics(), new KubernetesEvents(agentClient, "node-a", Clock.systemUTC()), Clock.systemUTC());
      agent.start();
      closing.add(agent);
      // As the Deployment runs it: allocator (its own informers, leader election, writes).
      closing.add(AllocatorRunner.start(allocatorClient, AGENT_NAMESPACE, "rbac-test",
          new AllocatorConfig(AllocatorConfig.DEFAULT_LEASE_NAME, Duration.ofSeconds(2), Duration.ofMillis(1500),
              Duration.ofMillis(200), Duration.ofSeconds(1))));

      await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
        assertThat(ns.exec("ip", "rule", "show")).contains("from 10.128.0.5 lookup 100 proto 201");
        assertThat(client.nodes().withName("node-a").get().getMetadata().getLabels())
            .containsKey("egress-service.k8s.ovn.org/default-web");
        assertThat(client.v1().events().inNamespace("default").list().getItems())
            .extracting(e -> e.getReportingComponent()).contains("egress-service-agent", "egress-service-allocator");
      });
      // An also-receive annotation no planned move needs (a leader stopped mid-move) is removed by a patch.
      client.resources(EgressService.class).inNamespace("default").withName("web").edit(es -> {
        es.getMetadata().setAnnotations(Map.of("egress-service.k8s.ovn.org/also-receive", "node-a,node-b"));
        return es;
      });
      await().atMost(Duration.ofSeconds(20)).until(() -> {
        Map<String, String> a = client.resources(EgressService.class).inNamespace("default").withName("web").get()
            .getMetadata().getAnnotations();
        return a == null || a.get("egress-service.k8s.ovn.org/also-receive") == null;
      });
      // An EgressService made while the agent runs, for a Service it never cached: fetched (a backfill).
      MockApiObjects.lbServiceOnNodeA(client, "api", "172.30.0.11", "5.5.5.6", "10.128.0.6");
      client.resources(EgressService.class)
          .resource(EgressServices.of("default", "api", SourceIPBy.LOADBALANCERIP, "100", "")).create();
      await().atMost(Duration.ofSeconds(20)).untilAsserted(() ->
          assertThat(ns.exec("ip", "rule", "show")).contains("from 10.128.0.6 lookup 100 proto 201"));
      // Gone, back at once (its Service and slices still parked: no fetch; the same outcome again, an Event that
      // repeats an earlier one), gone again.
      for (int round = 0; round < 2; round++) {
        client.resources(EgressService.class).inNamespace("default").withName("web").delete();
        await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
          assertThat(ns.exec("ip", "rule", "show")).doesNotContain("from 10.128.0.5 lookup 100");
          // (the mock keeps a key that a merge patch set to null, with the value null)
          assertThat(client.nodes().withName("node-a").get().getMetadata().getLabels())
              .doesNotContainEntry("egress-service.k8s.ovn.org/default-web", "");
        });
        if (round == 0) {
          client.resources(EgressService.class)
              .resource(EgressServices.of("default", "web", SourceIPBy.LOADBALANCERIP, "100", "")).create();
          await().atMost(Duration.ofSeconds(20)).untilAsserted(() ->
              assertThat(ns.exec("ip", "rule", "show")).contains("from 10.128.0.5 lookup 100 proto 201"));
        }
      }
    } finally {
      for (int i = closing.size() - 1; i >= 0; i--) {
        closing.get(i).close();
      }
    }
    // At SIGTERM each process GETs its workload; the allocator's is deleted: it removes its labels and hosts.
    assertThat(Uninstall.verdict(Optional.of(agentOwner)).uninstall()).as("the DaemonSet is present").isFalse();
    client.apps().deployments().inNamespace(AGENT_NAMESPACE).withName(ALLOCATOR_ACCOUNT).delete();
    assertThat(Uninstall.verdict(Optional.of(allocatorOwner)).uninstall()).as("the Deployment is deleted").isTrue();
    Uninstall.removeApiState(allocatorClient, Duration.ofSeconds(10));
    assertThat(client.resources(EgressService.class).inNamespace("default").withName("api").get().getStatus()
        .getHost()).as("api's status.host after the uninstall").isEmpty();

    Map<String, Set<Permission>> granted = grantsByAccount(Path.of("deploy/rbac.yaml"));
    Map<String, Set<String>> used = new TreeMap<>();
    Map<String, Set<Permission>> usedGrants = new TreeMap<>();
    Set<String> denied = new TreeSet<>();
    RecordedRequest request;
    while ((request = server.takeRequest(10, TimeUnit.MILLISECONDS)) != null) {
      String account = ACCOUNT_BY_USER_AGENT.get(request.getHeader("User-Agent"));
      if (account == null) {
        continue; // the test's own client
      }
      Permission needed = needed(request.getMethod(), request.getPath());
      used.computeIfAbsent(account, a -> new TreeSet<>()).add(needed.toString());
      Optional<Permission> grant = granted.getOrDefault(account, Set.of()).stream().filter(p -> grants(p, needed))
          .findFirst();
      if (grant.isPresent()) {
        usedGrants.computeIfAbsent(account, a -> new TreeSet<>(java.util.Comparator.comparing(Permission::toString)))
            .add(grant.get());
      } else {
        denied.add(account + ": " + request.getMethod() + " " + request.getPath() + " needs " + needed);
      }
    }
    System.out.println("requests by account, as permissions: " + used);
    assertThat(used).as("the test must see both processes' requests").containsOnlyKeys(NODE_AGENT_ACCOUNT, ALLOCATOR_ACCOUNT);
    assertThat(used.get(NODE_AGENT_ACCOUNT)).as("the node agent's requests").hasSizeGreaterThanOrEqualTo(8);
    assertThat(denied).as("requests not allowed by deploy/rbac.yaml").isEmpty();
    for (String account : List.of(NODE_AGENT_ACCOUNT, ALLOCATOR_ACCOUNT)) {
      Set<String> unused = new TreeSet<>();
      granted.getOrDefault(account, Set.of()).stream()
          .filter(p -> !usedGrants.getOrDefault(account, Set.of()).contains(p))
          .forEach(p -> unused.add(p.toString()));
      assertThat(unused).as("granted to %s but never used by its process", account).isEmpty();
    }
  }

  private KubernetesClient clientAs(String userAgent) {
    Config config = new ConfigBuilder(client.getConfiguration()).withUserAgent(userAgent).build();
    return new KubernetesClientBuilder().withConfig(config).build();
  }

  static boolean grants(Permission rule, Permission needed) {
    return rule.verb().equals(needed.verb()) && rule.group().equals(needed.group())
        && rule.resource().equals(needed.resource())
        && (rule.namespace().equals("*") || rule.namespace().equals(needed.namespace()))
        && (rule.name().isEmpty() || rule.name().equals(needed.name()));
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
    String name = named ? parts[i + 1] : "";
    java.util.regex.Matcher byField = java.util.regex.Pattern.compile("fieldSelector=metadata\\.name(?:%3D|=)([^&]+)")
        .matcher(pathAndQuery);
    if (!named && byField.find()) {
      name = byField.group(1);
    }
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
    return new Permission(verb, group, resource, namespace, name);
  }

  /**
   * ServiceAccount name -> every (verb, group, resource) its bindings grant: a ClusterRoleBinding to a ClusterRole
   * cluster-wide ("*"), a RoleBinding to a Role in the Role's namespace.
   */
  static Map<String, Set<Permission>> grantsByAccount(Path rbac) throws Exception {
    Map<String, List<Permission>> roles = new TreeMap<>();
    List<JsonNode> bindings = new ArrayList<>();
    try (MappingIterator<JsonNode> docs = new YAMLMapper().readerFor(JsonNode.class).readValues(Files.readString(rbac))) {
      while (docs.hasNextValue()) {
        JsonNode doc = docs.nextValue();
        String kind = doc.path("kind").asText();
        if (kind.equals("ClusterRoleBinding") || kind.equals("RoleBinding")) {
          bindings.add(doc);
        }
        if (!kind.equals("ClusterRole") && !kind.equals("Role")) {
          continue;
        }
        String namespace = kind.equals("Role") ? doc.path("metadata").path("namespace").asText() : "*";
        List<Permission> out = new ArrayList<>();
        for (JsonNode rule : doc.path("rules")) {
          List<String> names = new ArrayList<>();
          rule.path("resourceNames").forEach(n -> names.add(n.asText()));
          if (names.isEmpty()) {
            names.add("");
          }
          for (JsonNode g : rule.path("apiGroups")) {
            for (JsonNode r : rule.path("resources")) {
              for (JsonNode v : rule.path("verbs")) {
                names.forEach(n -> out.add(new Permission(v.asText(), g.asText(), r.asText(), namespace, n)));
              }
            }
          }
        }
        roles.put(kind + "/" + (namespace.equals("*") ? "" : namespace + "/") + doc.path("metadata").path("name").asText(),
            out);
      }
    }
    Map<String, Set<Permission>> byAccount = new TreeMap<>();
    for (JsonNode binding : bindings) {
      boolean cluster = binding.path("kind").asText().equals("ClusterRoleBinding");
      String refKind = binding.path("roleRef").path("kind").asText();
      assertThat(refKind).as("%s binds a %s", binding.path("metadata").path("name").asText(), refKind)
          .isEqualTo(cluster ? "ClusterRole" : "Role");
      String key = cluster ? "ClusterRole/" + binding.path("roleRef").path("name").asText()
          : "Role/" + binding.path("metadata").path("namespace").asText() + "/" + binding.path("roleRef").path("name").asText();
      assertThat(roles).as("the role bound by %s", binding.path("metadata").path("name").asText()).containsKey(key);
      for (JsonNode subject : binding.path("subjects")) {
        assertThat(subject.path("kind").asText()).isEqualTo("ServiceAccount");
        assertThat(subject.path("namespace").asText()).isEqualTo(AGENT_NAMESPACE);
        byAccount.computeIfAbsent(subject.path("name").asText(), a -> new java.util.HashSet<>()).addAll(roles.get(key));
      }
    }
    return byAccount;
  }
}
