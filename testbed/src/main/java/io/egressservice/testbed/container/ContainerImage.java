package io.egressservice.testbed.container;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.zip.GZIPInputStream;

/**
 * The agent's image, from the OCI archive scripts/build-image.sh writes, in podman's local store under the name the
 * rendered workloads ask for (their {@code image}), so that {@code kube play} finds it and pulls nothing. Loaded only
 * when the store does not hold this very image yet (podman's image id is the digest of the archive's config).
 */
public final class ContainerImage {
  private static final ObjectMapper JSON = new ObjectMapper();

  private ContainerImage() {}

  /** Loads {@code archive} into podman's store unless it is there, and tags it {@code reference}; returns its id. */
  public static String load(Podman podman, Path archive, String reference) {
    if (!Files.isRegularFile(archive)) {
      throw new IllegalArgumentException("no image archive " + archive + " (scripts/build-image.sh writes it)");
    }
    String id = configDigest(archive);
    Podman.Result present = podman.tryRun(Optional.empty(), Duration.ofSeconds(30),
        java.util.List.of("image", "inspect", "--format", "{{.Id}}", id));
    if (present.exitCode() != 0) {
      podman.run(Duration.ofMinutes(5), "load", "--quiet", "--input", archive.toString());
    }
    podman.run(Duration.ofSeconds(30), "tag", id, reference);
    return id;
  }

  /** The hex digest of the image config named by the archive's (first) manifest: podman's image id. */
  static String configDigest(Path archive) {
    try {
      JsonNode index = JSON.readTree(entry(archive, "index.json"));
      String manifest = index.path("manifests").get(0).path("digest").asText().substring("sha256:".length());
      JsonNode m = JSON.readTree(entry(archive, "blobs/sha256/" + manifest));
      return m.path("config").path("digest").asText().substring("sha256:".length());
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read the image archive " + archive, e);
    }
  }

  /** One file of a (plain) tar archive, read by walking its 512-byte headers. */
  private static byte[] entry(Path tar, String name) throws IOException {
    try (InputStream raw = new BufferedInputStream(Files.newInputStream(tar))) {
      InputStream in = tar.toString().endsWith(".gz") ? new GZIPInputStream(raw) : raw;
      byte[] header = new byte[512];
      while (in.readNBytes(header, 0, 512) == 512 && header[0] != 0) {
        String entry = new String(header, 0, 100, StandardCharsets.US_ASCII).replace("\0", "");
        String prefix = new String(header, 345, 155, StandardCharsets.US_ASCII).replace("\0", "");
        String full = prefix.isEmpty() ? entry : prefix + "/" + entry;
        long size = Long.parseLong(new String(header, 124, 12, StandardCharsets.US_ASCII).replace("\0", "").trim(), 8);
        if (full.equals(name) || full.equals("./" + name)) {
          return in.readNBytes((int) size);
        }
        in.skipNBytes((size + 511) / 512 * 512);
      }
    }
    throw new IOException(tar + " has no " + name);
  }
}
