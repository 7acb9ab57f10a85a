package io.egressservice.buildinfo;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class BuildInfoTest {
  /** The project's own version, as pom.xml says it. */
  static String pomVersion() throws IOException {
    Matcher m = Pattern.compile("<artifactId>egress-service-agent-parent</artifactId>\\s*<version>([^<]+)</version>")
        .matcher(Files.readString(Path.of("pom.xml")));
    assertThat(m.find()).as("project version in pom.xml").isTrue();
    return m.group(1);
  }

  @Test
  void currentCarriesTheMavenProjectVersion() throws IOException {
    assertThat(BuildInfo.current().version()).isEqualTo(pomVersion());
  }

  @Test
  void currentCarriesTheGitCommitWhenTheBuildHadOne() {
    // built from a git checkout (as here): the abbreviated HEAD at build time
    if (Files.isDirectory(Path.of(".git")) || Files.isRegularFile(Path.of(".git"))) {
      assertThat(BuildInfo.current().commit()).hasValueSatisfying(c -> assertThat(c).matches("[0-9a-f]{12}"));
    }
  }

  @Test
  void unfilteredOrBlankValuesAreUnknown() {
    assertThat(BuildInfo.of("${project.version}", "${git.commit}"))
        .isEqualTo(new BuildInfo(BuildInfo.UNKNOWN_VERSION, Optional.empty()));
    assertThat(BuildInfo.of(null, " ")).isEqualTo(new BuildInfo(BuildInfo.UNKNOWN_VERSION, Optional.empty()));
    assertThat(BuildInfo.of("1.2.3", "abc").describe()).isEqualTo("1.2.3 (commit abc)");
    assertThat(BuildInfo.of("1.2.3", "").describe()).isEqualTo("1.2.3");
  }
}
