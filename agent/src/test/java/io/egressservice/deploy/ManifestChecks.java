package io.egressservice.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Probe;
import io.fabric8.kubernetes.api.model.SecurityContext;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.rbac.ClusterRole;
import io.fabric8.kubernetes.api.model.rbac.ClusterRoleBinding;
import io.fabric8.kubernetes.api.model.rbac.PolicyRule;
import io.fabric8.kubernetes.api.model.rbac.Role;
import io.fabric8.kubernetes.api.model.rbac.RoleBinding;
import io.fabric8.kubernetes.api.model.rbac.Subject;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * The RBAC, probe and securityContext checks of an installation, on rendered objects: the same for deploy/ (as
 * kustomize renders it with each component) and for every preset of the chart. DeployManifestsTest holds the
 * file-level checks of deploy/ and reads its grants through {@link #grantsOf}.
 */
final class ManifestChecks {
  static final String NAMESPACE = "egress-service-agent";
  static final String AGENT_ACCOUNT = "egress-service-agent";
  static final String ALLOCATOR_ACCOUNT = "egress-service-allocator";
  private static final KubernetesSerialization KUBE = new KubernetesSerialization();

  /** What the node agent's account may do: read, and write Events (RbacCoverageTest: each grant is used). */
  static final Map<String, Set<String>> AGENT_GRANTS = new TreeMap<>(Map.of(
      "k8s.ovn.org/egressservices", Set.of("list", "watch"),
      "/services", Set.of("get", "list", "watch"),
      "discovery.k8s.io/endpointslices", Set.of("list", "watch"),
      "/nodes", Set.of("list", "watch"),
      "/events", Set.of("get", "create", "patch", "list"),
      NAMESPACE + ":apps/daemonsets", Set.of("get", "list", "watch")));

  static final Map<String, Set<String>> ALLOCATOR_GRANTS = new TreeMap<>(Map.of(
      "k8s.ovn.org/egressservices", Set.of("get", "list", "watch", "patch"),
      "k8s.ovn.org/egressservices/status", Set.of("update"),
      "/services", Set.of("get", "list", "watch"),
      "discovery.k8s.io/endpointslices", Set.of("list", "watch"),
      "/nodes", Set.of("get", "list", "watch", "patch"),
      "/events", Set.of("create"),
      NAMESPACE + ":coordination.k8s.io/leases", Set.of("get", "create", "patch"),
      NAMESPACE + ":apps/deployments", Set.of("get", "list", "watch")));

  /** The roles that may name their objects: the SCC's use, and each process's own workload (uninstall). */
  static final Map<String, String> NAMED_ROLES = Map.of(
      "egress-service-agent-scc", "egress-service-agent",
      "egress-service-agent-uninstall", "egress-service-agent",
      "egress-service-allocator-uninstall", "egress-service-allocator");

  /** What each process reads besides while it enforces the EgressServicePolicy (policy.enabled, components/tenancy). */
  static final Map<String, Set<String>> POLICY_GRANTS = Map.of(
      "egressservice.io/egressservicepolicies", Set.of("get", "list", "watch"),
      "/namespaces", Set.of("list", "watch"));

  /** kube-rbac-proxy's own checks of each scraper (only with monitoring.kubeRbacProxy.enabled). */
  static final Map<String, Set<String>> RBAC_PROXY_GRANTS = Map.of(
      "authentication.k8s.io/tokenreviews", Set.of("create"),
      "authorization.k8s.io/subjectaccessreviews", Set.of("create"));

  private ManifestChecks() {}

  /** Every check, for an installation with or without the allocator. */
  static void installation(String what, List<JsonNode> objects) {
    boolean proxy = containers(daemonSet(objects)).size() > 1;
    Map<String, Set<String>> agentGrants = new TreeMap<>(AGENT_GRANTS);
    if (proxy) {
      agentGrants.putAll(RBAC_PROXY_GRANTS);
    }
    if (objects.stream().anyMatch(o -> "SecurityContextConstraints".equals(o.path("kind").asText()))) {
      agentGrants.put("security.openshift.io/securitycontextconstraints", Set.of("use"));
    }
    boolean policy = containers(daemonSet(objects)).get(0).path("env").findValuesAsText("name")
        .contains("EGRESS_AGENT_EGRESS_SERVICE_POLICY");
    if (policy) {
      agentGrants.putAll(POLICY_GRANTS);
    }
    assertThat(grantsOf(objects, AGENT_ACCOUNT)).as("%s: the node agent's grants", what).isEqualTo(agentGrants);
    roles(what, objects);
    nodeAgent(what, objects);
    Optional<JsonNode> allocator = objects.stream().filter(o -> "Deployment".equals(o.path("kind").asText())).findFirst();
    if (allocator.isPresent()) {
      Map<String, Set<String>> allocatorGrants = new TreeMap<>(ALLOCATOR_GRANTS);
      if (policy) {
        allocatorGrants.putAll(POLICY_GRANTS);
      }
      assertThat(grantsOf(objects, ALLOCATOR_ACCOUNT)).as("%s: the allocator's grants", what).isEqualTo(allocatorGrants);
      allocator(what, KUBE.convertValue(allocator.get(), Deployment.class));
    } else {
      assertThat(grantsOf(objects, ALLOCATOR_ACCOUNT)).as("%s: no allocator, no grants for its account", what).isEmpty();
    }
  }

  /** No wildcards, secrets, pods; resourceNames only on the SCC's use, URLs only on the proxy's reader role. */
  static void roles(String what, List<JsonNode> objects) {
    for (JsonNode doc : ofKind(objects, "ClusterRole", "Role")) {
      String name = doc.path("metadata").path("name").asText();
      for (PolicyRule rule : KUBE.convertValue(doc, ClusterRole.class).getRules()) {
        assertThat(rule.getVerbs()).as("%s: %s", what, name).doesNotContain("*");
        if (name.equals("egress-service-agent-metrics-reader")) {
          assertThat(rule.getNonResourceURLs()).containsExactly("/metrics");
          assertThat(rule.getVerbs()).containsExactly("get");
          continue;
        }
        assertThat(rule.getResources()).as("%s: %s", what, name).doesNotContain("*", "secrets", "pods");
        assertThat(rule.getApiGroups()).as("%s: %s", what, name).doesNotContain("*");
        assertThat(rule.getNonResourceURLs()).as("%s: %s", what, name).isNullOrEmpty();
        if (NAMED_ROLES.containsKey(name)) {
          assertThat(rule.getResourceNames()).as("%s: %s", what, name).containsExactly(NAMED_ROLES.get(name));
        } else {
          assertThat(rule.getResourceNames()).as("%s: %s", what, name).isNullOrEmpty();
        }
      }
    }
  }

  static void nodeAgent(String what, List<JsonNode> objects) {
    DaemonSet ds = KUBE.convertValue(daemonSet(objects), DaemonSet.class);
    PodSpec pod = ds.getSpec().getTemplate().getSpec();
    assertThat(pod.getHostNetwork()).as(what).isTrue();
    assertThat(pod.getServiceAccountName()).as(what).isEqualTo(AGENT_ACCOUNT);
    assertThat(pod.getHostPID()).as(what).isNotEqualTo(Boolean.TRUE);
    assertThat(pod.getSecurityContext().getSeccompProfile().getType()).as(what).isEqualTo("RuntimeDefault");
    assertThat(ds.getSpec().getTemplate().getMetadata().getLabels()).as(what)
        .containsAllEntriesOf(ds.getSpec().getSelector().getMatchLabels());
    Container agent = pod.getContainers().get(0);
    assertThat(agent.getArgs()).as(what).startsWith("run", "--allocator=false");
    SecurityContext sc = agent.getSecurityContext();
    assertThat(sc.getCapabilities().getDrop()).as(what).containsExactly("ALL");
    assertThat(sc.getCapabilities().getAdd()).as(what).containsExactly("NET_ADMIN");
    assertThat(sc.getPrivileged()).as(what).isNotEqualTo(Boolean.TRUE);
    assertThat(sc.getAllowPrivilegeEscalation()).as(what).isFalse();
    assertThat(sc.getReadOnlyRootFilesystem()).as(what).isTrue();
    probes(what, agent);
    Map<String, EnvVar> env = agent.getEnv().stream().collect(Collectors.toMap(EnvVar::getName, e -> e));
    assertThat(env.get("EGRESS_AGENT_NODE_NAME").getValueFrom().getFieldRef().getFieldPath()).isEqualTo("spec.nodeName");
    assertThat(env.get("EGRESS_AGENT_METRICS_BIND_ADDRESS")).as("%s: /metrics bound to the node's address", what)
        .isNotNull();
    assertThat(env.get("EGRESS_AGENT_METRICS_BIND_ADDRESS").getValueFrom().getFieldRef().getFieldPath())
        .as("%s: the address the kubelet and the allocator probe", what).isEqualTo("status.hostIP");
    assertThat(env.get("EGRESS_AGENT_JVM_OPTIONS").getValue()).as(what).contains("-XX:+ExitOnOutOfMemoryError");
    assertThat(pod.getVolumes().stream().filter(v -> v.getHostPath() != null).map(v -> v.getHostPath().getPath()))
        .as("%s: the only host path", what).containsExactly("/etc/iproute2");
    for (Container sidecar : pod.getContainers().subList(1, pod.getContainers().size())) {
      SecurityContext s = sidecar.getSecurityContext();
      assertThat(s.getCapabilities().getDrop()).as("%s: %s", what, sidecar.getName()).containsExactly("ALL");
      assertThat(s.getCapabilities().getAdd()).as("%s: %s", what, sidecar.getName()).isNullOrEmpty();
      assertThat(s.getRunAsNonRoot()).as("%s: %s", what, sidecar.getName()).isTrue();
      assertThat(s.getAllowPrivilegeEscalation()).isFalse();
      assertThat(s.getReadOnlyRootFilesystem()).isTrue();
    }
  }

  static void allocator(String what, Deployment d) {
    PodSpec pod = d.getSpec().getTemplate().getSpec();
    assertThat(pod.getServiceAccountName()).as(what).isEqualTo(ALLOCATOR_ACCOUNT);
    assertThat(pod.getHostNetwork()).as(what).isNotEqualTo(Boolean.TRUE);
    assertThat(pod.getSecurityContext().getRunAsNonRoot()).as(what).isTrue();
    assertThat(d.getSpec().getSelector().getMatchLabels()).as(what)
        .doesNotContainEntry("app.kubernetes.io/name", "egress-service-agent");
    Container c = pod.getContainers().get(0);
    assertThat(c.getArgs()).as(what).startsWith("allocator");
    assertThat(c.getSecurityContext().getCapabilities().getDrop()).as(what).containsExactly("ALL");
    assertThat(c.getSecurityContext().getCapabilities().getAdd()).as(what).isNullOrEmpty();
    assertThat(c.getSecurityContext().getAllowPrivilegeEscalation()).as(what).isFalse();
    assertThat(c.getSecurityContext().getReadOnlyRootFilesystem()).as(what).isTrue();
    probes(what, c);
    assertThat(pod.getVolumes()).allSatisfy(v -> assertThat(v.getHostPath()).isNull());
  }

  private static void probes(String what, Container c) {
    assertThat(path(c.getStartupProbe())).as("%s: %s startup", what, c.getName()).isEqualTo("/healthz");
    assertThat(path(c.getLivenessProbe())).as("%s: %s liveness", what, c.getName()).isEqualTo("/healthz");
    assertThat(path(c.getReadinessProbe())).as("%s: %s readiness", what, c.getName()).isEqualTo("/readyz");
    for (Probe p : List.of(c.getStartupProbe(), c.getLivenessProbe(), c.getReadinessProbe())) {
      assertThat(p.getHttpGet().getPort().getStrVal()).as("%s: %s probes the metrics port", what, c.getName())
          .isEqualTo("metrics");
      assertThat(p.getHttpGet().getHost()).as("%s: the kubelet probes the pod's IP (the node's, with hostNetwork)", what)
          .isNull();
    }
    assertThat(c.getPorts()).anySatisfy(p -> assertThat(p.getName()).isEqualTo("metrics"));
  }

  private static String path(Probe probe) {
    assertThat(probe).isNotNull();
    assertThat(probe.getHttpGet()).isNotNull();
    return probe.getHttpGet().getPath();
  }

  /**
   * "group/resource" (cluster-wide) or "namespace:group/resource" (a Role) -> verbs, every rule of every role
   * bound to the ServiceAccount merged.
   */
  static TreeMap<String, Set<String>> grantsOf(List<JsonNode> objects, String account) {
    TreeMap<String, Set<String>> grants = new TreeMap<>();
    for (JsonNode doc : ofKind(objects, "ClusterRoleBinding")) {
      ClusterRoleBinding b = KUBE.convertValue(doc, ClusterRoleBinding.class);
      if (binds(b.getSubjects(), account)) {
        assertThat(b.getRoleRef().getKind()).isEqualTo("ClusterRole");
        merge(grants, "", KUBE.convertValue(named(objects, "ClusterRole", b.getRoleRef().getName()), ClusterRole.class)
            .getRules());
      }
    }
    for (JsonNode doc : ofKind(objects, "RoleBinding")) {
      RoleBinding b = KUBE.convertValue(doc, RoleBinding.class);
      if (binds(b.getSubjects(), account)) {
        String kind = b.getRoleRef().getKind();
        JsonNode roleDoc = named(objects, kind, b.getRoleRef().getName());
        List<PolicyRule> rules = kind.equals("Role") ? KUBE.convertValue(roleDoc, Role.class).getRules()
            : KUBE.convertValue(roleDoc, ClusterRole.class).getRules();
        if (kind.equals("Role")) {
          assertThat(roleDoc.path("metadata").path("namespace").asText()).isEqualTo(b.getMetadata().getNamespace());
          merge(grants, b.getMetadata().getNamespace() + ":", rules);
        } else {
          // a ClusterRole bound in one namespace: the SCC's "use" (cluster-scoped objects, so no prefix)
          merge(grants, "", rules);
        }
      }
    }
    return grants;
  }

  private static boolean binds(List<Subject> subjects, String account) {
    return subjects.stream().anyMatch(s -> "ServiceAccount".equals(s.getKind()) && account.equals(s.getName())
        && NAMESPACE.equals(s.getNamespace()));
  }

  private static void merge(TreeMap<String, Set<String>> grants, String prefix, List<PolicyRule> rules) {
    for (PolicyRule rule : rules) {
      for (String group : rule.getApiGroups()) {
        for (String resource : rule.getResources()) {
          grants.computeIfAbsent(prefix + group + "/" + resource, k -> new TreeSet<>()).addAll(rule.getVerbs());
        }
      }
    }
  }

  static JsonNode daemonSet(List<JsonNode> objects) {
    List<JsonNode> found = ofKind(objects, "DaemonSet");
    assertThat(found).hasSize(1);
    return found.get(0);
  }

  static List<JsonNode> containers(JsonNode workload) {
    List<JsonNode> out = new java.util.ArrayList<>();
    workload.path("spec").path("template").path("spec").path("containers").forEach(out::add);
    return out;
  }

  static List<JsonNode> ofKind(List<JsonNode> objects, String... kinds) {
    Set<String> wanted = Set.of(kinds);
    return objects.stream().filter(o -> wanted.contains(o.path("kind").asText())).collect(Collectors.toList());
  }

  private static JsonNode named(List<JsonNode> objects, String kind, String name) {
    List<JsonNode> found = ofKind(objects, kind).stream()
        .filter(d -> name.equals(d.path("metadata").path("name").asText())).collect(Collectors.toList());
    assertThat(found).as("%s %s", kind, name).hasSize(1);
    return found.get(0);
  }
}
