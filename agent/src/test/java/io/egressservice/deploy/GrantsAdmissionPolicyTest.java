package io.egressservice.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.egressservice.admission.AdmissionPolicy;
import io.egressservice.admission.AdmissionPolicy.Decision;
import io.egressservice.admission.AdmissionRequest;
import java.util.Map;
import java.util.function.BiConsumer;
import org.junit.jupiter.api.Test;

/**
 * The admission policy egress-service-grants as deploy/components/tenancy and the chart (policy.enabled) ship
 * it, evaluated as the API server evaluates it: an EgressService is admitted only where one grant of the policy
 * "cluster" selects its namespace by the Namespace's labels and allows its network.
 */
class GrantsAdmissionPolicyTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String TENANT = "system:serviceaccount:shop:deployer";
  private static final Map<String, AdmissionPolicy> SHIPPED = ShippedAdmissionPolicies.named("egress-service-grants",
      "components/tenancy/grants-admission.yaml", Map.of("policy.enabled", true));

  /** shop (team=web, tier=frontend) may use blue and 1001; everyone labelled tier=backend may use green. */
  private static final JsonNode POLICY = json("""
      {"apiVersion": "egressservice.io/v1alpha1", "kind": "EgressServicePolicy", "metadata": {"name": "cluster"},
       "spec": {"grants": [
         {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "shop"}}, "networks": ["blue", "1001"]},
         {"namespaceSelector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["backend"]}]},
          "networks": ["green"]}]}}""");

  @Test
  void aGrantedNamespaceMayUseItsNetworks() {
    forEachShipped((where, vap) -> {
      assertThat(create(vap, "shop", "blue", POLICY).admitted()).as(where).isTrue();
      assertThat(create(vap, "shop", "1001", POLICY).admitted()).as(where).isTrue();
      assertThat(create(vap, "shop", "", POLICY).admitted()).as("%s: no network, a grant selects shop", where).isTrue();
    });
  }

  @Test
  void anotherNamespaceIsRefusedNamingTheNamespaceAndTheNetwork() {
    forEachShipped((where, vap) -> {
      Decision other = create(vap, "mallory", Map.of("tier", "backend"), "blue", POLICY);
      assertThat(other.admitted()).as(where).isFalse();
      assertThat(other.messages()).as(where).singleElement().asString()
          .contains("\"mallory\"", "\"blue\"", "EgressServicePolicy \"cluster\"");
      Decision unselected = create(vap, "mallory", Map.of(), "", POLICY);
      assertThat(unselected.admitted()).as("%s: no grant selects the namespace: not even without a network", where)
          .isFalse();
      assertThat(unselected.messages()).as(where).singleElement().asString().contains("\"mallory\"", "may have no");
      assertThat(create(vap, "shop", "green", POLICY).admitted()).as("%s: shop is not tier=backend", where).isFalse();
    });
  }

  @Test
  void anEmptySelectorSelectsEveryNamespace() {
    JsonNode everyone = policy("""
        {"namespaceSelector": {}, "networks": ["blue"]}""");
    forEachShipped((where, vap) -> {
      assertThat(create(vap, "anyone", Map.of(), "blue", everyone).admitted()).as(where).isTrue();
      assertThat(create(vap, "anyone", Map.of(), "", everyone).admitted()).as(where).isTrue();
      assertThat(create(vap, "anyone", Map.of(), "red", everyone).admitted()).as(where).isFalse();
    });
  }

  @Test
  void matchExpressionsSelectAsKubernetesLabelSelectorsDo() {
    JsonNode in = expression("""
        {"key": "tier", "operator": "In", "values": ["backend", "batch"]}""");
    JsonNode notIn = expression("""
        {"key": "tier", "operator": "NotIn", "values": ["frontend"]}""");
    JsonNode exists = expression("""
        {"key": "egress", "operator": "Exists"}""");
    JsonNode doesNotExist = expression("""
        {"key": "quarantined", "operator": "DoesNotExist"}""");
    JsonNode inWithoutValues = expression("""
        {"key": "tier", "operator": "In"}""");
    forEachShipped((where, vap) -> {
      assertThat(create(vap, "a", Map.of("tier", "batch"), "blue", in).admitted()).as(where).isTrue();
      assertThat(create(vap, "a", Map.of("tier", "frontend"), "blue", in).admitted()).as(where).isFalse();
      assertThat(create(vap, "a", Map.of(), "blue", in).admitted()).as("%s: In, label missing", where).isFalse();
      assertThat(create(vap, "a", Map.of("tier", "backend"), "blue", notIn).admitted()).as(where).isTrue();
      assertThat(create(vap, "a", Map.of(), "blue", notIn).admitted()).as("%s: NotIn, label missing", where).isTrue();
      assertThat(create(vap, "a", Map.of("tier", "frontend"), "blue", notIn).admitted()).as(where).isFalse();
      assertThat(create(vap, "a", Map.of("egress", ""), "blue", exists).admitted()).as(where).isTrue();
      assertThat(create(vap, "a", Map.of("tier", "x"), "blue", exists).admitted()).as(where).isFalse();
      assertThat(create(vap, "a", Map.of(), "blue", doesNotExist).admitted()).as(where).isTrue();
      assertThat(create(vap, "a", Map.of("quarantined", "yes"), "blue", doesNotExist).admitted()).as(where).isFalse();
      assertThat(create(vap, "a", Map.of("tier", "backend"), "blue", inWithoutValues).admitted())
          .as("%s: In without values is an invalid selector: it selects nothing", where).isFalse();
    });
  }

  @Test
  void aNamespaceWithoutLabelsIsSelectedOnlyByWhatNeedsNone() {
    forEachShipped((where, vap) -> {
      ObjectNode bare = (ObjectNode) json("{\"apiVersion\": \"v1\", \"kind\": \"Namespace\"}");
      bare.putObject("metadata").put("name", "bare");
      Decision byLabel = vap.evaluate(AdmissionRequest.create(TENANT, "k8s.ovn.org", "egressservices",
          egressService("bare", "blue"), bare), Map.of("cluster", POLICY));
      assertThat(byLabel.admitted()).as(where).isFalse();
      Decision byAbsence = vap.evaluate(AdmissionRequest.create(TENANT, "k8s.ovn.org", "egressservices",
          egressService("bare", "blue"), bare), Map.of("cluster", expression("""
              {"key": "tier", "operator": "DoesNotExist"}""")));
      assertThat(byAbsence.admitted()).as(where).isTrue();
    });
  }

  @Test
  void anUpdateIsCheckedWhenItChangesTheNetworkOnly() {
    forEachShipped((where, vap) -> {
      JsonNode granted = egressService("shop", "blue");
      Decision toForeign = update(vap, "shop", granted, egressService("shop", "green"), POLICY);
      assertThat(toForeign.admitted()).as(where).isFalse();
      assertThat(toForeign.messages()).as(where).singleElement().asString().contains("\"green\"");
      assertThat(update(vap, "shop", granted, egressService("shop", "1001"), POLICY).admitted()).as(where).isTrue();
      assertThat(update(vap, "shop", granted, egressService("shop", ""), POLICY).admitted()).as(where).isTrue();
      // a service outside its grant (the grant withdrawn since): its metadata, the allocator's annotation and
      // its finalizers stay writable; the agents refuse the service itself
      ObjectNode annotated = (ObjectNode) egressService("mallory", "red");
      ((ObjectNode) annotated.path("metadata")).putObject("annotations")
          .put("egress-service.k8s.ovn.org/also-receive", "node-a,node-b");
      Decision unchanged = update(vap, "mallory", egressService("mallory", "red"), annotated, POLICY);
      assertThat(unchanged.matched()).as(where).isFalse();
      assertThat(unchanged.admitted()).as(where).isTrue();
    });
  }

  @Test
  void withoutThePolicyObjectEveryCheckedRequestIsRefused() {
    forEachShipped((where, vap) -> {
      Decision missing = vap.evaluate(AdmissionRequest.create(TENANT, "k8s.ovn.org", "egressservices",
          egressService("shop", ""), namespace("shop", Map.of())), Map.of());
      assertThat(missing.admitted()).as("%s: fail closed", where).isFalse();
    });
  }

  @Test
  void theShippedExamplePolicyAdmitsServicesWithoutANetworkAndRefusesNetworks() {
    JsonNode deployed =
        ShippedAdmissionPolicies.objects(HelmChart.ROOT.resolve("deploy/components/tenancy/policy.yaml")).get(0);
    JsonNode charted = Kustomize.one(HelmChart.render(Map.of("policy.enabled", true, "policy.asHook", false)),
        "EgressServicePolicy");
    for (JsonNode example : java.util.List.of(deployed, charted)) {
      assertThat(example.path("metadata").path("name").asText()).isEqualTo("cluster");
      forEachShipped((where, vap) -> {
        assertThat(create(vap, "anyone", Map.of(), "", example).admitted()).as(where).isTrue();
        assertThat(create(vap, "anyone", Map.of(), "blue", example).admitted()).as(where).isFalse();
      });
    }
  }

  @Test
  void otherResourcesAreNotMatched() {
    forEachShipped((where, vap) -> {
      Decision service = vap.evaluate(AdmissionRequest.create(TENANT, "", "services", egressService("x", "blue"),
          namespace("x", Map.of())), Map.of("cluster", POLICY));
      assertThat(service.matched()).as(where).isFalse();
    });
  }

  // ---- objects ----

  private static void forEachShipped(BiConsumer<String, AdmissionPolicy> check) {
    assertThat(SHIPPED).hasSize(2);
    SHIPPED.forEach(check);
  }

  private static Decision create(AdmissionPolicy vap, String ns, String network, JsonNode policy) {
    return create(vap, ns, Map.of("team", "web", "tier", "frontend"), network, policy);
  }

  private static Decision create(AdmissionPolicy vap, String ns, Map<String, String> labels, String network,
      JsonNode policy) {
    return vap.evaluate(AdmissionRequest.create(TENANT, "k8s.ovn.org", "egressservices", egressService(ns, network),
        namespace(ns, labels)), Map.of("cluster", policy));
  }

  private static Decision update(AdmissionPolicy vap, String ns, JsonNode old, JsonNode updated, JsonNode policy) {
    return vap.evaluate(AdmissionRequest.update(TENANT, "k8s.ovn.org", "egressservices", old, updated,
        namespace(ns, Map.of("team", "web", "tier", "frontend"))), Map.of("cluster", policy));
  }

  static JsonNode egressService(String ns, String network) {
    ObjectNode es = (ObjectNode) json("{\"apiVersion\": \"k8s.ovn.org/v1\", \"kind\": \"EgressService\"}");
    es.putObject("metadata").put("name", "web").put("namespace", ns);
    ObjectNode spec = es.putObject("spec").put("sourceIPBy", "LoadBalancerIP");
    if (!network.isEmpty()) {
      spec.put("network", network);
    }
    return es;
  }

  /** A Namespace as the API server keeps it: kubernetes.io/metadata.name is always among its labels. */
  private static JsonNode namespace(String name, Map<String, String> labels) {
    ObjectNode ns = (ObjectNode) json("{\"apiVersion\": \"v1\", \"kind\": \"Namespace\"}");
    ObjectNode l = ns.putObject("metadata").put("name", name).putObject("labels");
    l.put("kubernetes.io/metadata.name", name);
    labels.forEach(l::put);
    return ns;
  }

  private static JsonNode policy(String grant) {
    return json("{\"metadata\": {\"name\": \"cluster\"}, \"spec\": {\"grants\": [" + grant + "]}}");
  }

  private static JsonNode expression(String expression) {
    return policy("{\"namespaceSelector\": {\"matchExpressions\": [" + expression + "]}, \"networks\": [\"blue\"]}");
  }

  private static JsonNode json(String text) {
    try {
      return JSON.readTree(text);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }
}
