package io.egressservice.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import com.marcnuri.helm.Helm;
import com.marcnuri.helm.LintResult;
import com.marcnuri.helm.TemplateCommand;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * charts/egress-service-agent through Helm's own code, in-process (helm-java: Helm's Go library behind JNA):
 * {@code helm lint} and {@code helm template}, parsed into objects.
 */
final class HelmChart {
  static final Path ROOT = Path.of("").toAbsolutePath();
  static final Path CHART = ROOT.resolve("charts/egress-service-agent");
  static final String NAMESPACE = "egress-service-agent";
  private static final YAMLMapper YAML = new YAMLMapper();

  private HelmChart() {}

  static LintResult lint() {
    return new Helm(CHART).lint().strict().call();
  }

  /** {@code helm template egress-service-agent <chart> -n egress-service-agent --set k=v ...}. */
  static List<JsonNode> render(Map<String, Object> values) {
    return parse(renderText(values));
  }

  static String renderText(Map<String, Object> values) {
    return renderText(CHART, values);
  }

  /** {@code helm template} of {@code chart}: the chart's directory or a packaged chart (.tgz). */
  static String renderText(Path chart, Map<String, Object> values) {
    TemplateCommand t = new Helm(chart).template().withName("egress-service-agent").withNamespace(NAMESPACE);
    values.forEach(t::set);
    return t.call();
  }

  static List<JsonNode> parse(String yaml) {
    List<JsonNode> docs = new ArrayList<>();
    try (var parser = YAML.getFactory().createParser(yaml)) {
      for (var it = YAML.readValues(parser, JsonNode.class); it.hasNext(); ) {
        JsonNode doc = it.next();
        if (doc != null && !doc.isNull() && !doc.isMissingNode() && doc.size() > 0) {
          docs.add(doc);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    assertThat(docs).allSatisfy(d -> assertThat(d.path("kind").asText()).isNotEmpty());
    return docs;
  }
}
