package io.egressservice.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Probe;
import io.fabric8.kubernetes.api.model.SecurityContext;
import io.fabric8.kubernetes.api.model.Toleration;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.rbac.ClusterRole;
import io.fabric8.kubernetes.api.model.rbac.PolicyRule;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * Guards the install manifests ({@code deploy/}): no kustomize, kubectl or Docker needed, the files are read
 * as YAML (the image's build files: {@link ImageEntrypointTest}). Runs from the project directory (surefire's
 * working directory).
 */
class DeployManifestsTest {
  private static final Path ROOT = Path.of("").toAbsolutePath();
  private static final Path DEPLOY = ROOT.resolve("deploy");
  private static final String NAMESPACE = "egress-service-agent";
  private static final String SERVICE_ACCOUNT = "egress-service-agent";
  private static final String ALLOCATOR_ACCOUNT = "egress-service-allocator";
  private static final String IMAGE = "ghcr.io/egress-service-agent/egress-service-agent";
  private static final YAMLMapper YAML = new YAMLMapper();
  private static final KubernetesSerialization KUBE = new KubernetesSerialization();

  // ---- kustomize base ----

  @Test
  void crdCopyIsByteForByteTheOriginal() throws IOException {
    assertCopy("crds/egressservices.k8s.ovn.org.yaml", "deploy/crds/");
  }

  @Test
  void policyCrdCopyOfTheTenancyComponentIsByteForByteTheOriginal() throws IOException {
    assertCopy("crds/egressservicepolicies.egressservice.io.yaml", "deploy/components/tenancy/");
  }

  /** kustomize cannot reference files outside its root: {@code dir} holds a copy of {@code original}. */
  private static void assertCopy(String original, String dir) throws IOException {
    Path from = ROOT.resolve(original);
    Path copy = ROOT.resolve(dir).resolve(from.getFileName());
    assertThat(Files.mismatch(copy, from))
        .as("first differing byte: %s must be a copy of %s (kustomize cannot reference files outside its root);"
            + " refresh it with cp %s %s", ROOT.relativize(copy), original, original, dir)
        .isEqualTo(-1L);
  }

  @Test
  void everyResourceOfTheKustomizationExistsAndParses() throws IOException {
    JsonNode kustomization = readOne(DEPLOY.resolve("kustomization.yaml"));
    assertThat(kustomization.path("kind").asText()).isEqualTo("Kustomization");
    List<String> resources = texts(kustomization.path("resources"));
    assertThat(resources).isNotEmpty();
    for (String resource : resources) {
      Path file = DEPLOY.resolve(resource).normalize();
      assertThat(file).as("resource %s", resource).startsWith(DEPLOY).isRegularFile();
      for (JsonNode doc : readAll(file)) {
        assertThat(doc.path("apiVersion").asText()).as("apiVersion in %s", resource).isNotEmpty();
        assertThat(doc.path("kind").asText()).as("kind in %s", resource).isNotEmpty();
        assertThat(doc.path("metadata").path("name").asText()).as("metadata.name in %s", resource).isNotEmpty();
      }
    }
    assertThat(baseObjects().stream().map(d -> d.path("kind").asText()).collect(Collectors.toList()))
        .containsExactlyInAnyOrder("CustomResourceDefinition", "Namespace", "ServiceAccount", "ServiceAccount",
            "ClusterRole", "ClusterRole", "ClusterRoleBinding", "ClusterRoleBinding", "Role", "RoleBinding",
            "Role", "RoleBinding", "Role", "RoleBinding", // each process's own workload (uninstall)
            "DaemonSet", "Deployment", "PodDisruptionBudget",
            "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
            "ValidatingAdmissionPolicyBinding");
    assertThat(texts(kustomization.path("images").path(0).path("name")))
        .as("images: override of the DaemonSet's image").containsExactly(container().getImage().split(":")[0]);
    assertThat(allocatorContainer().getImage().split(":")[0]).isEqualTo(IMAGE);
  }

  @Test
  void theKustomizationNamesTheReleaseOfThePomNotLatest() throws IOException {
    JsonNode image = readOne(DEPLOY.resolve("kustomization.yaml")).path("images").path(0);
    assertThat(image.path("name").asText()).isEqualTo(IMAGE);
    String pomVersion = Files.readString(ROOT.resolve("pom.xml"))
        .replaceFirst("(?s).*?</parent>", "")
        .replaceFirst("(?s).*?<artifactId>egress-service-agent-parent</artifactId>\\s*<version>([^<]+)</version>.*", "$1");
    assertThat(image.path("newTag").asText())
        .as("deploy/ installs the release this tree is (the pom's version without -SNAPSHOT; the release"
            + " workflow pushes that tag)")
        .isNotEqualTo("latest")
        .isEqualTo(pomVersion.replace("-SNAPSHOT", ""));
  }

  @Test
  void namespacedObjectsLiveInTheAgentNamespace() throws IOException {
    for (JsonNode doc : baseObjects()) {
      String kind = doc.path("kind").asText();
      if (Set.of("ServiceAccount", "Role", "RoleBinding", "DaemonSet", "Deployment", "PodDisruptionBudget")
          .contains(kind)) {
        assertThat(doc.path("metadata").path("namespace").asText()).as(kind).isEqualTo(NAMESPACE);
      }
    }
    assertThat(one("Namespace").path("metadata").path("name").asText()).isEqualTo(NAMESPACE);
    assertThat(all("ServiceAccount").stream().map(d -> d.path("metadata").path("name").asText()))
        .containsExactlyInAnyOrder(SERVICE_ACCOUNT, ALLOCATOR_ACCOUNT);
  }

  // ---- DaemonSet ----

  @Test
  void daemonSetRunsInTheHostNetworkOnEveryNode() throws IOException {
    DaemonSet ds = daemonSet();
    PodSpec pod = ds.getSpec().getTemplate().getSpec();
    assertThat(pod.getHostNetwork()).isTrue();
    assertThat(pod.getDnsPolicy()).isEqualTo("ClusterFirstWithHostNet");
    assertThat(pod.getPriorityClassName()).isEqualTo("system-node-critical");
    assertThat(pod.getServiceAccountName()).isEqualTo(SERVICE_ACCOUNT);
    assertThat(pod.getTolerations()).hasSize(1);
    Toleration toleration = pod.getTolerations().get(0);
    assertThat(toleration.getOperator()).isEqualTo("Exists");
    assertThat(toleration.getKey()).isNull();
    assertThat(toleration.getEffect()).isNull();
    assertThat(ds.getSpec().getUpdateStrategy().getType()).isEqualTo("RollingUpdate");
    assertThat(ds.getSpec().getUpdateStrategy().getRollingUpdate().getMaxUnavailable().getStrVal()).isEqualTo("10%");
    assertThat(ds.getSpec().getTemplate().getMetadata().getLabels())
        .containsAllEntriesOf(ds.getSpec().getSelector().getMatchLabels());
    assertThat(pod.getContainers()).hasSize(1);
    assertThat(container().getArgs()).as("the allocator is the Deployment's job").containsExactly("run", "--allocator=false");
    assertThat(pod.getNodeSelector()).isEqualTo(Map.of("kubernetes.io/os", "linux"));
    assertThat(container().getTerminationMessagePolicy()).isEqualTo("FallbackToLogsOnError");
  }

  @Test
  void containerHasNetAdminOnlyAndAReadOnlyRoot() throws IOException {
    SecurityContext sc = container().getSecurityContext();
    assertThat(sc.getCapabilities().getDrop()).containsExactly("ALL");
    assertThat(sc.getCapabilities().getAdd()).containsExactly("NET_ADMIN");
    assertThat(sc.getPrivileged()).isNotEqualTo(Boolean.TRUE);
    assertThat(sc.getAllowPrivilegeEscalation()).isFalse();
    assertThat(sc.getReadOnlyRootFilesystem()).isTrue();
    assertThat(sc.getRunAsUser()).isZero();
    assertThat(daemonSet().getSpec().getTemplate().getSpec().getHostPID()).isNotEqualTo(Boolean.TRUE);
  }

  @Test
  void environmentComesFromTheDownwardApi() throws IOException {
    Map<String, EnvVar> env = container().getEnv().stream().collect(Collectors.toMap(EnvVar::getName, e -> e));
    assertThat(env.get("EGRESS_AGENT_NODE_NAME").getValueFrom().getFieldRef().getFieldPath()).isEqualTo("spec.nodeName");
    assertThat(env).as("no leader election in the DaemonSet").doesNotContainKeys("EGRESS_AGENT_POD_NAME",
        "EGRESS_AGENT_ALLOCATOR");
    assertThat(env.get("EGRESS_AGENT_JVM_OPTIONS").getValue()).contains("-XX:+UseSerialGC", "-Djna.tmpdir=/tmp");
    Map<String, EnvVar> allocatorEnv =
        allocatorContainer().getEnv().stream().collect(Collectors.toMap(EnvVar::getName, e -> e));
    assertThat(allocatorEnv.get("EGRESS_AGENT_POD_NAME").getValueFrom().getFieldRef().getFieldPath())
        .isEqualTo("metadata.name");
    assertThat(allocatorEnv.get("EGRESS_AGENT_POD_NAMESPACE").getValueFrom().getFieldRef().getFieldPath())
        .isEqualTo("metadata.namespace");
  }

  /**
   * Out of memory, the process exits and is restarted (it stayed up with a dead reconcile thread), and
   * the heap ceiling follows the container's memory limit instead of a fixed -Xmx, with room left for the rest of
   * the process. The node agent's ceiling is large enough for 5,000 services (out of memory at 96 MiB before).
   */
  @Test
  void outOfMemoryEndsTheProcessAndTheHeapFollowsTheMemoryLimit() throws IOException {
    for (Container c : List.of(container(), allocatorContainer())) {
      String options = c.getEnv().stream().filter(e -> e.getName().equals("EGRESS_AGENT_JVM_OPTIONS")).findFirst()
          .orElseThrow().getValue();
      assertThat(options).as(c.getName()).contains("-XX:+ExitOnOutOfMemoryError").doesNotContain("-Xmx")
          .contains("-Xms16m", "-Xmn12m", "-XX:MinHeapFreeRatio=25", "-XX:MaxHeapFreeRatio=40", "-XX:-ShrinkHeapInSteps");
      java.util.regex.Matcher percent = java.util.regex.Pattern.compile("-XX:MaxRAMPercentage=(\\d+)").matcher(options);
      assertThat(percent.find()).as(c.getName() + ": " + options).isTrue();
      long limit = io.fabric8.kubernetes.api.model.Quantity.getAmountInBytes(c.getResources().getLimits().get("memory"))
          .longValueExact();
      long heap = limit * Integer.parseInt(percent.group(1)) / 100;
      assertThat(limit - heap).as("%s: MiB left beside the heap", c.getName()).isGreaterThanOrEqualTo(128L << 20);
    }
    long agentLimit = io.fabric8.kubernetes.api.model.Quantity.getAmountInBytes(
        container().getResources().getLimits().get("memory")).longValueExact();
    assertThat(agentLimit * 70 / 100).as("the node agent's heap ceiling").isGreaterThanOrEqualTo(320L << 20);
    String options = container().getEnv().stream().filter(e -> e.getName().equals("EGRESS_AGENT_JVM_OPTIONS")).findFirst()
        .orElseThrow().getValue();
    assertThat(io.egressservice.testbed.AgentProcess.DAEMONSET_JVM_OPTIONS)
        .as("the testbed runs its agents with the DaemonSet's flags")
        .isEqualTo(options.replace(" -XX:TrimNativeHeapInterval=10000", "").replace(" -Djna.tmpdir=/tmp", ""));
  }

  @Test
  void probesAndMetricsPort() throws IOException {
    Container c = container();
    assertThat(c.getPorts()).singleElement().satisfies(p -> {
      assertThat(p.getName()).isEqualTo("metrics");
      assertThat(p.getContainerPort()).isEqualTo(9464);
    });
    assertThat(httpPath(c.getLivenessProbe())).isEqualTo("/healthz");
    assertThat(httpPath(c.getReadinessProbe())).isEqualTo("/readyz");
    assertThat(httpPath(c.getStartupProbe())).isNotNull();
    for (Probe probe : List.of(c.getLivenessProbe(), c.getReadinessProbe(), c.getStartupProbe())) {
      String port = probe.getHttpGet().getPort().getStrVal();
      assertThat(port == null ? probe.getHttpGet().getPort().getIntVal() : port).isIn("metrics", 9464);
    }
    assertThat(c.getResources().getRequests()).containsOnlyKeys("cpu", "memory");
    assertThat(c.getResources().getLimits()).containsOnlyKeys("memory");
  }

  @Test
  void volumesAreTmpTheHostsIproute2AndTheProbeKeyReadOnly() throws IOException {
    PodSpec pod = daemonSet().getSpec().getTemplate().getSpec();
    Map<String, Volume> volumes = pod.getVolumes().stream().collect(Collectors.toMap(Volume::getName, v -> v));
    Map<String, VolumeMount> mounts =
        container().getVolumeMounts().stream().collect(Collectors.toMap(VolumeMount::getMountPath, m -> m));
    assertThat(mounts).containsOnlyKeys("/tmp", "/etc/iproute2", "/etc/egress-service-agent/probe-key");
    assertThat(volumes.get(mounts.get("/etc/egress-service-agent/probe-key").getName()).getSecret().getSecretName())
        .isEqualTo("egress-service-agent-probe-key");
    assertThat(mounts.get("/etc/egress-service-agent/probe-key").getReadOnly()).isTrue();
    assertThat(volumes.get(mounts.get("/tmp").getName()).getEmptyDir()).isNotNull();
    Volume iproute2 = volumes.get(mounts.get("/etc/iproute2").getName());
    assertThat(iproute2.getHostPath().getPath()).isEqualTo("/etc/iproute2");
    assertThat(iproute2.getHostPath().getType()).isEqualTo("DirectoryOrCreate");
    assertThat(mounts.get("/etc/iproute2").getReadOnly()).isTrue();
    assertThat(volumes.values().stream().filter(v -> v.getHostPath() != null))
        .as("the only host path").containsExactly(iproute2);
  }

  // ---- RBAC ----

  @Test
  void theDaemonSetsAccountReadsAndCreatesEventsOnly() throws IOException {
    assertThat(daemonSet().getSpec().getTemplate().getSpec().getServiceAccountName()).isEqualTo(SERVICE_ACCOUNT);
    TreeMap<String, Set<String>> grants = grantsOf(SERVICE_ACCOUNT);
    assertThat(grants).isEqualTo(new TreeMap<>(Map.of(
        "k8s.ovn.org/egressservices", Set.of("list", "watch"),
        "/services", Set.of("get", "list", "watch"),
        "discovery.k8s.io/endpointslices", Set.of("list", "watch"),
        "/nodes", Set.of("list", "watch"),
        "/events", Set.of("get", "create", "patch", "list"),
        NAMESPACE + ":apps/daemonsets", Set.of("get", "list", "watch"))));
    // Events are the one thing it writes: created, a repeat patched into the earlier one, its own listed at start
    grants.forEach((resource, verbs) -> assertThat(resource.equals("/events") ? Set.of() : verbs)
        .as("write verbs on %s held by every node's pod", resource).allMatch(v -> Set.of("get", "list", "watch").contains(v)));
  }

  @Test
  void onlyTheAllocatorsAccountWritesStatusLabelsAndTheLease() throws IOException {
    Deployment allocator = allocator();
    assertThat(allocator.getSpec().getTemplate().getSpec().getServiceAccountName()).isEqualTo(ALLOCATOR_ACCOUNT);
    assertThat(grantsOf(ALLOCATOR_ACCOUNT)).isEqualTo(new TreeMap<>(Map.of(
        "k8s.ovn.org/egressservices", Set.of("get", "list", "watch", "patch"),
        "k8s.ovn.org/egressservices/status", Set.of("update"),
        "/services", Set.of("get", "list", "watch"),
        "discovery.k8s.io/endpointslices", Set.of("list", "watch"),
        "/nodes", Set.of("get", "list", "watch", "patch"),
        "/events", Set.of("create"),
        NAMESPACE + ":coordination.k8s.io/leases", Set.of("get", "create", "patch"),
        NAMESPACE + ":apps/deployments", Set.of("get", "list", "watch"))));
  }

  @Test
  void rolesHaveNoWildcardsSecretsOrUrls() throws IOException {
    for (JsonNode doc : all("ClusterRole", "Role")) {
      String name = doc.path("metadata").path("name").asText();
      for (PolicyRule rule : KUBE.convertValue(doc, ClusterRole.class).getRules()) {
        assertThat(rule.getVerbs()).doesNotContain("*");
        assertThat(rule.getResources()).doesNotContain("*").doesNotContain("secrets").doesNotContain("pods");
        assertThat(rule.getApiGroups()).doesNotContain("*");
        assertThat(rule.getNonResourceURLs()).isNullOrEmpty();
        if (ManifestChecks.NAMED_ROLES.containsKey(name)) {
          assertThat(rule.getResourceNames()).as(name).containsExactly(ManifestChecks.NAMED_ROLES.get(name));
        } else {
          assertThat(rule.getResourceNames()).as(name).isNullOrEmpty();
        }
      }
    }
  }

  // ---- OVN-Kubernetes component ----

  @Test
  void ovnKubernetesComponentPatchesTheBaseDaemonSet() throws IOException {
    Path dir = DEPLOY.resolve("components/ovn-kubernetes");
    JsonNode component = readOne(dir.resolve("kustomization.yaml"));
    assertThat(component.path("kind").asText()).isEqualTo("Component");
    List<String> patches = new ArrayList<>();
    component.path("patches").forEach(p -> patches.add(p.path("path").asText()));
    assertThat(patches).contains("agent-env.yaml");
    DaemonSet patch = KUBE.convertValue(readOne(dir.resolve("agent-env.yaml")), DaemonSet.class);
    DaemonSet base = daemonSet();
    assertThat(patch.getMetadata().getName()).isEqualTo(base.getMetadata().getName());
    assertThat(patch.getMetadata().getNamespace()).isEqualTo(base.getMetadata().getNamespace());
    Container patched = patch.getSpec().getTemplate().getSpec().getContainers().get(0);
    assertThat(patched.getName()).isEqualTo(container().getName());
    Map<String, String> env = patched.getEnv().stream().collect(Collectors.toMap(EnvVar::getName, EnvVar::getValue));
    assertThat(env).as("the base DaemonSet already runs --allocator=false").doesNotContainKey("EGRESS_AGENT_ALLOCATOR");
    assertThat(env).doesNotContainKey("EGRESS_AGENT_REMOTE_ENDPOINTS"); // steered: no OVN reroute with its feature off
    assertThat(env.get("EGRESS_AGENT_EXCLUDE_CIDR")).contains("169.254.169.0/29"); // OvnMasqueradePresetTest: coherent
  }

  // ---- allocator Deployment ----

  @Test
  void allocatorIsTwoLeaderElectedReplicasWithoutHostAccess() throws IOException {
    Deployment d = allocator();
    PodSpec pod = d.getSpec().getTemplate().getSpec();
    assertThat(d.getSpec().getReplicas()).isEqualTo(2);
    assertThat(d.getSpec().getTemplate().getMetadata().getLabels())
        .containsAllEntriesOf(d.getSpec().getSelector().getMatchLabels());
    assertThat(d.getSpec().getSelector().getMatchLabels())
        .as("the DaemonSet's selector must not match the allocator's pods")
        .doesNotContainEntry("app.kubernetes.io/name", "egress-service-agent");
    assertThat(pod.getHostNetwork()).isNotEqualTo(Boolean.TRUE);
    assertThat(pod.getNodeSelector()).isEqualTo(Map.of("kubernetes.io/os", "linux"));
    assertThat(pod.getSecurityContext().getRunAsNonRoot()).isTrue();
    Container c = allocatorContainer();
    assertThat(c.getArgs()).containsExactly("allocator");
    assertThat(c.getTerminationMessagePolicy()).isEqualTo("FallbackToLogsOnError");
    assertThat(c.getSecurityContext().getCapabilities().getDrop()).containsExactly("ALL");
    assertThat(c.getSecurityContext().getCapabilities().getAdd()).isNullOrEmpty();
    assertThat(c.getSecurityContext().getAllowPrivilegeEscalation()).isFalse();
    assertThat(c.getSecurityContext().getReadOnlyRootFilesystem()).isTrue();
    assertThat(httpPath(c.getLivenessProbe())).isEqualTo("/healthz");
    assertThat(httpPath(c.getReadinessProbe())).isEqualTo("/readyz");
    assertThat(c.getPorts()).singleElement().satisfies(p -> assertThat(p.getName()).isEqualTo("metrics"));
    assertThat(pod.getVolumes()).allSatisfy(v -> assertThat(v.getHostPath()).isNull());
    JsonNode pdb = one("PodDisruptionBudget");
    assertThat(pdb.path("spec").path("maxUnavailable").asInt()).isEqualTo(1);
    assertThat(pdb.path("spec").path("selector").path("matchLabels").path("app.kubernetes.io/name").asText())
        .isEqualTo("egress-service-allocator");
  }

  // ---- helpers ----

  /** The grants bound to the account, as ManifestChecks reads them for every rendering (chart presets too). */
  private static TreeMap<String, Set<String>> grantsOf(String account) throws IOException {
    return ManifestChecks.grantsOf(all("ClusterRoleBinding", "RoleBinding", "ClusterRole", "Role"), account);
  }

  private static String httpPath(Probe probe) {
    assertThat(probe).isNotNull();
    assertThat(probe.getHttpGet()).isNotNull();
    return probe.getHttpGet().getPath();
  }

  private static Container container() throws IOException {
    return daemonSet().getSpec().getTemplate().getSpec().getContainers().get(0);
  }

  private static DaemonSet daemonSet() throws IOException {
    return KUBE.convertValue(one("DaemonSet"), DaemonSet.class);
  }

  private static Deployment allocator() throws IOException {
    return KUBE.convertValue(one("Deployment"), Deployment.class);
  }

  private static Container allocatorContainer() throws IOException {
    return allocator().getSpec().getTemplate().getSpec().getContainers().get(0);
  }

  private static JsonNode one(String kind) throws IOException {
    List<JsonNode> found = all(kind);
    assertThat(found).as("objects of kind %s in the base", kind).hasSize(1);
    return found.get(0);
  }

  private static JsonNode named(String kind, String name) throws IOException {
    List<JsonNode> found = all(kind).stream().filter(d -> name.equals(d.path("metadata").path("name").asText())).toList();
    assertThat(found).as("%s %s in the base", kind, name).hasSize(1);
    return found.get(0);
  }

  private static List<JsonNode> all(String... kinds) throws IOException {
    Set<String> wanted = Set.of(kinds);
    return baseObjects().stream().filter(d -> wanted.contains(d.path("kind").asText())).collect(Collectors.toList());
  }

  /** Every object of every resource file listed in deploy/kustomization.yaml. */
  private static List<JsonNode> baseObjects() throws IOException {
    List<JsonNode> objects = new ArrayList<>();
    for (String resource : texts(readOne(DEPLOY.resolve("kustomization.yaml")).path("resources"))) {
      objects.addAll(readAll(DEPLOY.resolve(resource)));
    }
    return objects;
  }

  private static JsonNode readOne(Path file) throws IOException {
    List<JsonNode> docs = readAll(file);
    assertThat(docs).as("documents in %s", file).hasSize(1);
    return docs.get(0);
  }

  private static List<JsonNode> readAll(Path file) throws IOException {
    List<JsonNode> docs = new ArrayList<>();
    try (var parser = YAML.getFactory().createParser(file.toFile())) {
      for (var it = YAML.readValues(parser, JsonNode.class); it.hasNext(); ) {
        JsonNode doc = it.next();
        if (doc != null && !doc.isNull() && !doc.isMissingNode()) {
          docs.add(doc);
        }
      }
    }
    return docs;
  }

  private static List<String> texts(JsonNode node) {
    List<String> out = new ArrayList<>();
    if (node.isArray()) {
      node.forEach(n -> out.add(n.asText()));
    } else if (!node.isMissingNode()) {
      out.add(node.asText());
    }
    return out;
  }
}
