package io.egressservice.testbed;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.ConfigMapBuilder;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The test API server answers {@code GET /version} as a real one does, whatever it holds: the agent's API probe
 * asks it every 10 s while its watches are quiet, so an answer that grows with the store (the CRUD mock's own:
 * a List of every object) would make every idle agent in a testbed cluster or a bench download and parse it all.
 */
class ApiServerVersionTest {
  @Test
  void versionIsAnsweredWithTheServersVersionNotWithEveryObjectItHolds(@TempDir Path dir) {
    try (ApiServer api = new ApiServer(dir)) {
      for (int i = 0; i < 50; i++) {
        api.client().configMaps().inNamespace("version").resource(new ConfigMapBuilder()
            .withNewMetadata().withName("cm-" + i).withNamespace("version").endMetadata()
            .addToData("payload", "x".repeat(1000)).build()).create();
      }

      assertThat(api.client().getKubernetesVersion().getGitVersion()).isEqualTo("v1.31.0");
      String body = api.client().raw("/version");
      assertThat(body).doesNotContain("cm-").hasSizeLessThan(1024);
      assertThat(api.client().configMaps().inNamespace("version").list().getItems()).hasSize(50);
    }
  }
}
