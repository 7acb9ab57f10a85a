package io.egressservice.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The CI and release workflows hold the least permissions and run actions pinned by commit, and Dependabot keeps
 * the pins, the Maven dependencies and the base image current.
 */
class WorkflowsTest {
  private static final Path GITHUB = Path.of(".github").toAbsolutePath();
  private static final YAMLMapper YAML = new YAMLMapper();
  /** A 40-hex commit, then the tag it is as a comment (what Dependabot updates together). */
  private static final Pattern PINNED = Pattern.compile("^[\\w.-]+/[\\w./-]+@[0-9a-f]{40} # v\\d+(\\.\\d+)*$");
  private static final Pattern USES = Pattern.compile("(?m)^\\s*(?:- )?uses:\\s*(.+?)\\s*$");

  static List<Path> workflows() throws IOException {
    try (Stream<Path> files = Files.list(GITHUB.resolve("workflows"))) {
      return files.filter(p -> p.toString().endsWith(".yml") || p.toString().endsWith(".yaml")).sorted().toList();
    }
  }

  @Test
  void everyActionIsPinnedByCommitWithItsTag() throws IOException {
    List<String> unpinned = new ArrayList<>();
    int uses = 0;
    for (Path workflow : workflows()) {
      Matcher m = USES.matcher(Files.readString(workflow));
      while (m.find()) {
        uses++;
        if (!PINNED.matcher(m.group(1)).matches()) {
          unpinned.add(workflow.getFileName() + ": " + m.group(1));
        }
      }
    }
    assertThat(uses).as("actions used by the workflows").isGreaterThan(5);
    assertThat(unpinned).as("actions not pinned as owner/name@<40-hex commit> # v<tag>").isEmpty();
  }

  @Test
  void everyWorkflowDeclaresItsPermissionsAndOnlyTheReleaseWritesPackages() throws IOException {
    for (Path workflow : workflows()) {
      JsonNode w = YAML.readTree(workflow.toFile());
      assertThat(w.has("permissions")).as("%s: a top-level permissions block", workflow.getFileName()).isTrue();
      assertThat(w.path("permissions").path("contents").asText("none")).as("%s: top level", workflow.getFileName())
          .isIn("none", "read");
      w.path("jobs").fields().forEachRemaining(job -> {
        JsonNode p = job.getValue().path("permissions");
        p.fields().forEachRemaining(grant -> {
          if (grant.getValue().asText().equals("write")) {
            assertThat(workflow.getFileName() + "/" + job.getKey() + ": " + grant.getKey())
                .as("a write grant").isIn("release.yml/image: packages", "release.yml/image: id-token",
                    "release.yml/image: attestations", "release.yml/image: contents");
          }
        });
      });
    }
  }

  @Test
  void dependabotUpdatesMavenActionsAndTheBaseImage() throws IOException {
    JsonNode config = YAML.readTree(GITHUB.resolve("dependabot.yml").toFile());
    assertThat(config.path("version").asInt()).isEqualTo(2);
    List<String> ecosystems = new ArrayList<>();
    config.path("updates").forEach(u -> ecosystems.add(u.path("package-ecosystem").asText()));
    assertThat(ecosystems).containsExactlyInAnyOrder("maven", "github-actions", "docker");
  }
}
