package io.egressservice.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.MissingNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.egressservice.admission.AdmissionPolicy;
import io.egressservice.admission.AdmissionPolicy.Decision;
import io.egressservice.admission.AdmissionRequest;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.function.BiConsumer;
import org.junit.jupiter.api.Test;

/**
 * The allocator's admission policies as deploy/ and the chart ship them, evaluated as the API server does: the
 * writes the allocator makes (AllocatorWrites, PlannedMoves: JSON merge patches of a Node's host labels and of an
 * EgressService's also-receive annotation; its status through the status subresource) pass; anything else its
 * account sends to a Node or an EgressService is refused; other users' requests are not the policies' business.
 */
class AllocatorAdmissionPolicyTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String ALLOCATOR = "system:serviceaccount:egress-service-agent:egress-service-allocator";
  private static final String ADMIN = "kubernetes-admin";
  private static final String HOST_LABEL = "egress-service.k8s.ovn.org/shop-web";
  private static final String ALSO_RECEIVE = "egress-service.k8s.ovn.org/also-receive";
  private static final Map<String, AdmissionPolicy> NODES = ShippedAdmissionPolicies.named(
      "egress-service-allocator-nodes", "allocator-admission.yaml", Map.of());
  private static final Map<String, AdmissionPolicy> EGRESS_SERVICES = ShippedAdmissionPolicies.named(
      "egress-service-allocator-egressservices", "allocator-admission.yaml", Map.of());

  @Test
  void theAllocatorMaySetAndRemoveHostLabelsOnANode() {
    forEach(NODES, (where, vap) -> {
      JsonNode labelled = patch(node(), "{\"metadata\": {\"labels\": {\"" + HOST_LABEL + "\": \"\"}}}");
      assertThat(nodeUpdate(vap, ALLOCATOR, node(), labelled).admitted()).as(where).isTrue();
      JsonNode unlabelled = patch(labelled, "{\"metadata\": {\"labels\": {\"" + HOST_LABEL + "\": null}}}");
      assertThat(nodeUpdate(vap, ALLOCATOR, labelled, unlabelled).admitted()).as(where).isTrue();
      JsonNode bare = patch(node(), "{\"metadata\": {\"labels\": null}}");
      assertThat(nodeUpdate(vap, ALLOCATOR, bare, patch(bare, "{\"metadata\": {\"labels\": {\"" + HOST_LABEL
          + "\": \"\"}}}")).admitted()).as("%s: a node without labels gets its first", where).isTrue();
    });
  }

  /** A write the allocator never makes: what it is, its JSON merge patch, a word the refusal names. */
  private record Forbidden(String what, String patch, String word) {}

  @Test
  void theAllocatorMayNotTaintCordonOrRelabelANode() {
    List<Forbidden> writes = List.of(
        new Forbidden("a taint", "{\"spec\": {\"taints\": [{\"key\": \"evil\", \"effect\": \"NoExecute\"}]}}", "spec"),
        new Forbidden("unschedulable", "{\"spec\": {\"unschedulable\": true}}", "spec"),
        new Forbidden("a foreign label",
            "{\"metadata\": {\"labels\": {\"node-role.kubernetes.io/control-plane\": \"\"}}}", "labels"),
        new Forbidden("a label changed", "{\"metadata\": {\"labels\": {\"kubernetes.io/os\": \"windows\"}}}", "labels"),
        new Forbidden("a label removed", "{\"metadata\": {\"labels\": {\"kubernetes.io/os\": null}}}", "labels"),
        new Forbidden("an annotation", "{\"metadata\": {\"annotations\": {\"k8s.ovn.org/node-subnets\": \"{}\"}}}",
            "annotations"),
        new Forbidden("a finalizer", "{\"metadata\": {\"finalizers\": [\"example.com/hold\"]}}", "finalizers"),
        new Forbidden("a host label with a taint", "{\"metadata\": {\"labels\": {\"" + HOST_LABEL + "\": \"\"}},"
            + " \"spec\": {\"unschedulable\": true}}", "spec"));
    forEach(NODES, (where, vap) -> {
      writes.forEach(w -> assertRefused(where + ": " + w.what(),
          nodeUpdate(vap, ALLOCATOR, node(), patch(node(), w.patch())), w.word()));
      assertRefused(where + ": its status", vap.evaluate(AdmissionRequest.update(ALLOCATOR, "", "nodes", node(),
          patch(node(), "{\"status\": {\"conditions\": [{\"type\": \"Ready\", \"status\": \"False\"}]}}"),
          MissingNode.getInstance()).onSubResource("status"), Map.of()), "status");
    });
  }

  @Test
  void theAllocatorMaySetAndRemoveTheAlsoReceiveAnnotation() {
    forEach(EGRESS_SERVICES, (where, vap) -> {
      JsonNode moving = patch(egressService(), "{\"metadata\": {\"annotations\": {\"" + ALSO_RECEIVE
          + "\": \"node-a,node-b\"}}}");
      assertThat(esUpdate(vap, ALLOCATOR, egressService(), moving).admitted()).as(where).isTrue();
      JsonNode moved = patch(moving, "{\"metadata\": {\"annotations\": {\"" + ALSO_RECEIVE + "\": null}}}");
      assertThat(esUpdate(vap, ALLOCATOR, moving, moved).admitted()).as(where).isTrue();
      Decision status = vap.evaluate(AdmissionRequest.update(ALLOCATOR, "k8s.ovn.org", "egressservices",
          egressService(), patch(egressService(), "{\"status\": {\"host\": \"node-b\"}}"), namespace())
          .onSubResource("status"), Map.of());
      assertThat(status.admitted()).as("%s: status.host (the API server takes nothing else from /status)", where)
          .isTrue();
    });
  }

  @Test
  void theAllocatorMayNotRewriteAnEgressService() {
    List<Forbidden> writes = List.of(
        new Forbidden("its network", "{\"spec\": {\"network\": \"1337\"}}", "spec"),
        new Forbidden("its sourceIPBy", "{\"spec\": {\"sourceIPBy\": \"Network\"}}", "spec"),
        new Forbidden("another annotation", "{\"metadata\": {\"annotations\": {\"example.com/owner\": \"mallory\"}}}",
            "annotation"),
        new Forbidden("an annotation removed", "{\"metadata\": {\"annotations\": {\"example.com/ticket\": null}}}",
            "annotation"),
        new Forbidden("a label", "{\"metadata\": {\"labels\": {\"app\": \"other\"}}}", "labels"),
        new Forbidden("a finalizer", "{\"metadata\": {\"finalizers\": [\"example.com/hold\"]}}", "finalizers"));
    forEach(EGRESS_SERVICES, (where, vap) -> writes.forEach(w -> assertRefused(where + ": " + w.what(),
        esUpdate(vap, ALLOCATOR, egressService(), patch(egressService(), w.patch())), w.word())));
  }

  @Test
  void otherUsersRequestsAreNotMatched() {
    forEach(NODES, (where, vap) -> {
      Decision cordon = nodeUpdate(vap, ADMIN, node(), patch(node(), "{\"spec\": {\"unschedulable\": true}}"));
      assertThat(cordon.matched()).as(where).isFalse();
      assertThat(cordon.admitted()).as(where).isTrue();
      Decision otherAccount = nodeUpdate(vap, "system:serviceaccount:other:egress-service-allocator", node(),
          patch(node(), "{\"spec\": {\"unschedulable\": true}}"));
      assertThat(otherAccount.matched()).as("%s: the same name in another namespace", where).isFalse();
    });
    forEach(EGRESS_SERVICES, (where, vap) -> assertThat(esUpdate(vap, "system:serviceaccount:shop:deployer",
        egressService(), patch(egressService(), "{\"spec\": {\"network\": \"blue\"}}")).matched()).as(where).isFalse());
  }

  @Test
  void theChartMatchesTheAccountOfItsReleaseNamespace() {
    AdmissionPolicy chart = NODES.get("chart");
    String condition = chart.policy().path("spec").path("matchConditions").path(0).path("expression").asText();
    assertThat(condition).contains("'system:serviceaccount:" + HelmChart.NAMESPACE + ":egress-service-allocator'");
  }

  // ---- objects ----

  private static void forEach(Map<String, AdmissionPolicy> shipped, BiConsumer<String, AdmissionPolicy> check) {
    assertThat(shipped).hasSize(2);
    shipped.forEach(check);
  }

  private static void assertRefused(String what, Decision decision, String messageWord) {
    assertThat(decision.admitted()).as(what).isFalse();
    assertThat(String.join("; ", decision.messages())).as(what).contains("egress-service allocator", messageWord);
  }

  private static Decision nodeUpdate(AdmissionPolicy vap, String user, JsonNode old, JsonNode updated) {
    return vap.evaluate(AdmissionRequest.update(user, "", "nodes", old, updated, MissingNode.getInstance()), Map.of());
  }

  private static Decision esUpdate(AdmissionPolicy vap, String user, JsonNode old, JsonNode updated) {
    return vap.evaluate(AdmissionRequest.update(user, "k8s.ovn.org", "egressservices", old, updated, namespace()),
        Map.of());
  }

  private static JsonNode node() {
    return json("""
        {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": "node-a", "labels": {"kubernetes.io/os": "linux", "kubernetes.io/hostname": "node-a"},
                      "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
         "spec": {"podCIDR": "10.244.1.0/24", "podCIDRs": ["10.244.1.0/24"]},
         "status": {"conditions": [{"type": "Ready", "status": "True"}],
                    "addresses": [{"type": "InternalIP", "address": "192.168.10.11"}]}}""");
  }

  private static JsonNode egressService() {
    return json("""
        {"apiVersion": "k8s.ovn.org/v1", "kind": "EgressService",
         "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"},
                      "annotations": {"example.com/ticket": "42"}},
         "spec": {"sourceIPBy": "LoadBalancerIP", "nodeSelector": {"matchLabels": {"pool": "egress"}}},
         "status": {"host": "node-a"}}""");
  }

  private static JsonNode namespace() {
    return json("{\"apiVersion\": \"v1\", \"kind\": \"Namespace\", \"metadata\": {\"name\": \"shop\"}}");
  }

  /** RFC 7386 JSON merge patch, as the allocator sends its writes (null removes a key). */
  private static JsonNode patch(JsonNode target, String mergePatch) {
    return merge(target.deepCopy(), json(mergePatch));
  }

  private static JsonNode merge(JsonNode target, JsonNode patch) {
    if (!patch.isObject()) {
      return patch;
    }
    ObjectNode out = target != null && target.isObject() ? (ObjectNode) target : JSON.createObjectNode();
    for (Iterator<Map.Entry<String, JsonNode>> it = patch.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      if (e.getValue().isNull()) {
        out.remove(e.getKey());
      } else {
        out.set(e.getKey(), merge(out.get(e.getKey()), e.getValue()));
      }
    }
    return out;
  }

  private static JsonNode json(String text) {
    try {
      return JSON.readTree(text);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }
}
