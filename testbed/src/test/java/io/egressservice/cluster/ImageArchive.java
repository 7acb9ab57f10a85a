package io.egressservice.cluster;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * The agent's image archive for container mode: target/egress-service-agent-image.oci.tar when it is newer than the
 * image jar it was made from, else built here by scripts/build-image.sh (which prints why when it cannot build: then
 * the tests skip with that reason).
 */
final class ImageArchive {
  static final Path ARCHIVE = Path.of("target/egress-service-agent-image.oci.tar").toAbsolutePath();
  static final Path JAR = Path.of("target/egress-service-agent-image.jar").toAbsolutePath();
  private static final long BUILD_LIMIT_MINUTES = 20;
  private static String why = "";

  private ImageArchive() {}

  /** The archive, built first when missing or older than the jar; empty (see {@link #why()}) when it cannot be. */
  static synchronized Optional<Path> ensure() {
    try {
      if (Files.isRegularFile(ARCHIVE) && (!Files.exists(JAR)
          || !Files.getLastModifiedTime(ARCHIVE).toInstant().isBefore(Files.getLastModifiedTime(JAR).toInstant()))) {
        return Optional.of(ARCHIVE);
      }
      long start = System.nanoTime();
      Process p = new ProcessBuilder(List.of("scripts/build-image.sh", ARCHIVE.toString())).redirectErrorStream(true)
          .start();
      p.getOutputStream().close();
      byte[] out = p.getInputStream().readAllBytes();
      if (!p.waitFor(BUILD_LIMIT_MINUTES, TimeUnit.MINUTES)) {
        p.destroyForcibly();
        why = "scripts/build-image.sh took more than " + BUILD_LIMIT_MINUTES + " minutes";
        return Optional.empty();
      }
      String log = new String(out, StandardCharsets.UTF_8);
      System.out.printf("scripts/build-image.sh (%.0f s):%n%s%n", (System.nanoTime() - start) / 1e9, log);
      if (p.exitValue() != 0 || log.contains("build-image: SKIPPED") || !Files.isRegularFile(ARCHIVE)) {
        why = log.lines().filter(l -> l.contains("SKIPPED") || l.contains("FAILED")).findFirst()
            .orElse("scripts/build-image.sh exited " + p.exitValue());
        return Optional.empty();
      }
      return Optional.of(ARCHIVE);
    } catch (IOException e) {
      why = "cannot run scripts/build-image.sh: " + e.getMessage();
      return Optional.empty();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      why = "interrupted";
      return Optional.empty();
    }
  }

  /** Why there is no archive, after {@link #ensure()} found none. */
  static synchronized String why() {
    return why;
  }
}
