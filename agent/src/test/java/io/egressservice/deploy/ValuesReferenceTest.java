package io.egressservice.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * docs/values.md is generated from values.yaml's comments ({@link ValuesReference}) and never drifts from it: every
 * value the schema knows is documented there, with its default and its comment.
 */
class ValuesReferenceTest {
  @Test
  void docsValuesMdIsWhatValuesYamlSays() throws Exception {
    String expected = ValuesReference.markdown();
    if (Boolean.getBoolean("values.reference.write")) {
      ValuesReference.main(new String[0]);
    }
    String actual = Files.exists(ValuesReference.DOC) ? Files.readString(ValuesReference.DOC, StandardCharsets.UTF_8) : "";
    assertThat(actual).as("docs/values.md is out of date with charts/egress-service-agent/values.yaml: rerun with "
        + "-Dvalues.reference.write=true (see the top of docs/values.md)").isEqualTo(expected);
  }

  @Test
  void everyValueHasItsDefaultAndItsComment() {
    List<ValuesReference.Row> rows = ValuesReference.rows("""
        # Values of a chart.

        image:
          # Where from.
          repository: example/agent
          # Default: the chart's appVersion.
          tag: ""
        replicas: 2
        # Lists stay one value.
        tolerations:
          - key: node-role.kubernetes.io/control-plane
            operator: Exists
        # After the list.
        affinity: {}
        """);
    assertThat(rows).containsExactly(
        new ValuesReference.Row("image", "", ""),
        new ValuesReference.Row("image.repository", "\"example/agent\"", "Where from."),
        new ValuesReference.Row("image.tag", "\"\"", "Default: the chart's appVersion."),
        new ValuesReference.Row("replicas", "2", ""),
        new ValuesReference.Row("tolerations",
            "[{\"key\":\"node-role.kubernetes.io/control-plane\",\"operator\":\"Exists\"}]", "Lists stay one value."),
        new ValuesReference.Row("affinity", "{}", "After the list."));
  }

  @Test
  void everyTopLevelValueOfTheSchemaIsDocumented() throws Exception {
    var schema = new com.fasterxml.jackson.databind.ObjectMapper()
        .readTree(HelmChart.CHART.resolve("values.schema.json").toFile()).path("properties");
    List<String> documented = ValuesReference.rows(Files.readString(ValuesReference.VALUES)).stream()
        .map(ValuesReference.Row::path).toList();
    schema.fieldNames().forEachRemaining(name -> {
      if (!name.equals("global")) {
        assertThat(documented).as("values.yaml documents %s", name).contains(name);
      }
    });
  }
}
