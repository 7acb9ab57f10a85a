package io.egressservice.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.egressservice.admission.KubernetesCel;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The EgressService CRD refuses a bad spec.network at the API server: its OpenAPI maxLength and pattern (RE2,
 * as the API server's Go regexp: {@code $} is the end of the text, where java.util.regex would also accept a
 * final newline) and its x-kubernetes-validations rules (CEL with {@code self}), in crds/, deploy/crds/ and the
 * chart's rendering.
 */
class EgressServiceNetworkSchemaTest {
  private static final String REPEATED = "n".repeat(64);

  @Test
  void badNetworksAreRefused() {
    List<String> bad = List.of("4294967295", "0", "253", "254", "255", "main", "local", "default", "unspec", "0100",
        "evil\ntouch /tmp/PWNED #", "\u001b[2K", REPEATED, "a b", "blue\n", "12345678901", "1abc", "-1");
    forEachCopy((where, network) -> {
      for (String value : bad) {
        assertThat(refusals(network, value)).as("%s refuses %s", where, printable(value)).isNotEmpty();
      }
    });
  }

  @Test
  void goodNetworksAreAdmitted() {
    List<String> good = List.of("", "1", "100", "252", "256", "4294967294", "vrf-blue", "blue_net.1", "_x",
        "n".repeat(63));
    forEachCopy((where, network) -> {
      for (String value : good) {
        assertThat(refusals(network, value)).as("%s admits %s", where, printable(value)).isEmpty();
      }
    });
  }

  /** Why the API server refuses {@code value} for this schema; empty: admitted. */
  private static List<String> refusals(JsonNode schema, String value) {
    List<String> out = new ArrayList<>();
    if (value.codePointCount(0, value.length()) > schema.path("maxLength").asInt(Integer.MAX_VALUE)) {
      out.add("longer than maxLength");
    }
    if (schema.has("pattern")
        && !com.google.re2j.Pattern.compile(schema.path("pattern").asText()).matcher(value).find()) {
      out.add("does not match the pattern");
    }
    for (JsonNode rule : schema.path("x-kubernetes-validations")) {
      KubernetesCel.Result r = KubernetesCel.eval(rule.path("rule").asText(), Map.of("self", value));
      if (!r.isTrue()) {
        out.add(rule.path("message").asText() + r.error().map(e -> " (" + e + ")").orElse(""));
      }
    }
    return out;
  }

  private static void forEachCopy(java.util.function.BiConsumer<String, JsonNode> check) {
    Map<String, JsonNode> copies = new LinkedHashMap<>();
    for (String file : List.of("crds/egressservices.k8s.ovn.org.yaml", "deploy/crds/egressservices.k8s.ovn.org.yaml")) {
      copies.put(file, network(ShippedAdmissionPolicies.objects(HelmChart.ROOT.resolve(file)).get(0)));
    }
    copies.put("the chart", network(ManifestChecks.ofKind(HelmChart.render(Map.of()), "CustomResourceDefinition")
        .stream().filter(c -> c.path("metadata").path("name").asText().equals("egressservices.k8s.ovn.org"))
        .findFirst().orElseThrow()));
    copies.forEach((where, schema) -> {
      assertThat(schema.path("type").asText()).as(where).isEqualTo("string");
      assertThat(schema.path("x-kubernetes-validations").size()).as(where).isEqualTo(2);
      check.accept(where, schema);
    });
  }

  private static JsonNode network(JsonNode crd) {
    return crd.path("spec").path("versions").path(0).path("schema").path("openAPIV3Schema").path("properties")
        .path("spec").path("properties").path("network");
  }

  private static String printable(String value) {
    StringBuilder out = new StringBuilder("\"");
    value.codePoints().forEach(c -> out.append(c < 0x20 || c == 0x7f ? String.format("\\u%04x", c)
        : new String(Character.toChars(c))));
    return out.append('"').toString();
  }
}
