package io.egressservice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.buildinfo.BuildInfo;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** {@code --version} printed "(development build)" instead of what was built. */
class VersionTest {
  @Test
  void versionPrintsTheMavenProjectVersionAndCommitNotDevelopmentBuild() throws IOException {
    Matcher pom = Pattern.compile("<artifactId>egress-service-agent-parent</artifactId>\\s*<version>([^<]+)</version>")
        .matcher(Files.readString(Path.of("pom.xml")));
    assertThat(pom.find()).isTrue();

    InProcess.Result r = InProcess.run("--version");

    assertThat(r.exit()).isZero();
    assertThat(r.out().strip()).startsWith("egress-service-agent " + pom.group(1))
        .doesNotContain("development build");
    BuildInfo.current().commit().ifPresent(c -> assertThat(r.out()).contains("commit " + c));
  }
}
