package io.egressservice.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.egressservice.admission.AdmissionPolicy;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The ValidatingAdmissionPolicies as they ship, each with its binding: from the file of deploy/ (kustomize
 * copies it verbatim) and from the chart's rendering, so that the tests evaluate what is installed.
 */
final class ShippedAdmissionPolicies {
  private ShippedAdmissionPolicies() {}

  /** "deploy/<file>" and "chart" -> the policy {@code name} with its binding. */
  static Map<String, AdmissionPolicy> named(String name, String deployFile, Map<String, Object> chartValues) {
    Map<String, AdmissionPolicy> out = new LinkedHashMap<>();
    out.put("deploy/" + deployFile, find(name, HelmChart.parse(read(HelmChart.ROOT.resolve("deploy/" + deployFile)))));
    out.put("chart", find(name, HelmChart.render(chartValues)));
    return out;
  }

  /** The objects of a file (YAML, one or more documents). */
  static List<JsonNode> objects(Path file) {
    return HelmChart.parse(read(file));
  }

  private static String read(Path file) {
    try {
      return java.nio.file.Files.readString(file);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  private static AdmissionPolicy find(String name, List<JsonNode> objects) {
    return new AdmissionPolicy(one(objects, "ValidatingAdmissionPolicy", name),
        one(objects, "ValidatingAdmissionPolicyBinding", name));
  }

  private static JsonNode one(List<JsonNode> objects, String kind, String name) {
    List<JsonNode> found = ManifestChecks.ofKind(objects, kind).stream()
        .filter(o -> name.equals(o.path("metadata").path("name").asText())).toList();
    assertThat(found).as("%s %s", kind, name).hasSize(1);
    if (kind.equals("ValidatingAdmissionPolicyBinding")) {
      assertThat(found.get(0).path("spec").path("policyName").asText()).isEqualTo(name);
      assertThat(found.get(0).path("spec").path("validationActions").toString()).isEqualTo("[\"Deny\"]");
    }
    return found.get(0);
  }
}
