package io.egressservice.health;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.Comparator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The probe key as the kubelet mounts a Secret: read again after an atomic swap, no restart. */
class ProbeKeysTest {
  private static final String OLD = "o".repeat(8) + "0123456789abcdefghijklmnopqrstuvwxyz";
  private static final String NEW = "n".repeat(8) + "0123456789abcdefghijklmnopqrstuvwxyz";

  private Path dir;

  @AfterEach
  void tearDown() throws IOException {
    if (dir != null) {
      try (var paths = Files.walk(dir)) {
        for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
          Files.delete(p);
        }
      }
    }
  }

  @Test
  void aRotatedSecretIsReadWithoutARestart() throws IOException {
    dir = Files.createTempDirectory("secret");
    version("..v1", OLD, null);
    Files.createSymbolicLink(dir.resolve("..data"), Path.of("..v1"));
    Files.createSymbolicLink(dir.resolve("key"), Path.of("..data/key"));
    Files.createSymbolicLink(dir.resolve(ProbeKeys.PREVIOUS), Path.of("..data/" + ProbeKeys.PREVIOUS));
    ProbeKeys keys = ProbeKeys.fromFile(dir.resolve("key"), Duration.ZERO);
    ProbeKeys.Key old = keys.now().current().orElseThrow();
    assertThat(keys.now().accepted()).containsExactly(old);

    // the kubelet's update: a new directory, then ..data swapped to it in one rename
    version("..v2", NEW, OLD);
    Files.createSymbolicLink(dir.resolve("..data_tmp"), Path.of("..v2"));
    Files.move(dir.resolve("..data_tmp"), dir.resolve("..data"), StandardCopyOption.ATOMIC_MOVE,
        StandardCopyOption.REPLACE_EXISTING);

    ProbeKeys.Loaded now = keys.now();
    assertThat(now.current()).get().isNotEqualTo(old);
    assertThat(now.accepted()).as("the new key, and the old one as previous").hasSize(2).contains(old);
  }

  @Test
  void aMissingOrShortKeyIsNoKeyAndSaysWhy() throws IOException {
    dir = Files.createTempDirectory("secret");
    ProbeKeys keys = ProbeKeys.fromFile(dir.resolve("key"), Duration.ZERO);
    assertThat(keys.configured()).isTrue();
    assertThat(keys.now().accepted()).as("no file yet").isEmpty();
    Files.writeString(dir.resolve("key"), "short\n");
    assertThat(keys.now().accepted()).isEmpty();
    assertThat(keys.now().problem()).get().asString().contains("fewer than 32");
    Files.writeString(dir.resolve("key"), NEW + "\n");
    assertThat(keys.now().current()).isPresent();
    assertThat(ProbeKeys.none().now().accepted()).isEmpty();
  }

  private void version(String name, String key, String previous) throws IOException {
    Path v = Files.createDirectory(dir.resolve(name));
    Files.writeString(v.resolve("key"), key);
    if (previous != null) {
      Files.writeString(v.resolve(ProbeKeys.PREVIOUS), previous);
    }
  }
}
