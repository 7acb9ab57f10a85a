package io.egressservice.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import io.egressservice.buildinfo.BuildInfo;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * One version everywhere: the pom, {@code --version} (build-info), the image tag deploy/ installs, the chart's
 * version and appVersion, and the newest release of CHANGELOG.md; and it is a release (no -SNAPSHOT), so that
 * what deploy/ and the chart name is an image the release workflow pushes.
 */
class VersionAgreementTest {
  private static final Path ROOT = Path.of("").toAbsolutePath();
  private static final YAMLMapper YAML = new YAMLMapper();

  static String pomVersion() {
    try {
      Matcher m = Pattern.compile("(?s)<artifactId>egress-service-agent-parent</artifactId>\\s*<version>([^<]+)</version>")
          .matcher(Files.readString(ROOT.resolve("pom.xml")));
      assertThat(m.find()).as("the project's <version> in pom.xml").isTrue();
      return m.group(1).trim();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static JsonNode chartYaml() {
    try {
      return YAML.readTree(ROOT.resolve("charts/egress-service-agent/Chart.yaml").toFile());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Test
  void thePomNamesARelease() {
    assertThat(pomVersion()).as("a semantic version without -SNAPSHOT: the version deploy/ and the chart install")
        .matches("\\d+\\.\\d+\\.\\d+");
  }

  @Test
  void versionBuildInfoDeployChartAndChangelogAgree() throws IOException {
    String version = pomVersion();
    assertThat(BuildInfo.current().version()).as("--version (build-info.properties, filtered by Maven)")
        .isEqualTo(version);
    JsonNode kustomization = YAML.readTree(ROOT.resolve("deploy/kustomization.yaml").toFile());
    assertThat(kustomization.path("images").path(0).path("newTag").asText()).as("the image tag deploy/ installs")
        .isEqualTo(version);
    assertThat(chartYaml().path("appVersion").asText()).as("the chart's appVersion (its default image tag)")
        .isEqualTo(version);
    assertThat(chartYaml().path("version").asText()).as("the chart's version").isEqualTo(version);
    Matcher newest = Pattern.compile("(?m)^## \\[(\\d+\\.\\d+\\.\\d+)\\] - \\d{4}-\\d{2}-\\d{2}$")
        .matcher(Files.readString(ROOT.resolve("CHANGELOG.md")));
    assertThat(newest.find()).as("a released version in CHANGELOG.md (## [x.y.z] - YYYY-MM-DD)").isTrue();
    assertThat(newest.group(1)).as("the newest release in CHANGELOG.md").isEqualTo(version);
  }

  @Test
  void theReleaseWorkflowRefusesATagThatDisagrees() throws IOException {
    String release = Files.readString(ROOT.resolve(".github/workflows/release.yml"));
    assertThat(release).as("the release workflow compares the tag with each place the version is written")
        .contains("pom.xml", "deploy/kustomization.yaml", "charts/egress-service-agent/Chart.yaml", "CHANGELOG.md");
  }
}
