package io.egressservice.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * {@code kubectl kustomize} on {@code deploy/} with a chosen set of its components, as an operator's own
 * kustomization would use them (components cannot be rendered alone, and kustomize wants relative paths).
 */
final class Kustomize {
  private static final Path ROOT = Path.of("").toAbsolutePath();
  private static final YAMLMapper YAML = new YAMLMapper();

  private Kustomize() {}

  /** Why rendering cannot run here, if it cannot. */
  static Optional<String> unavailable() {
    try {
      Process p = new ProcessBuilder("kubectl", "version", "--client").redirectErrorStream(true).start();
      p.getInputStream().readAllBytes();
      if (!p.waitFor(30, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        return Optional.of("kubectl version --client did not answer within 30 s");
      }
      return p.exitValue() == 0 ? Optional.empty() : Optional.of("kubectl version --client exited " + p.exitValue());
    } catch (IOException e) {
      return Optional.of("kubectl is not installed (" + e.getMessage() + "); install it to render the overlays");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Optional.of("interrupted");
    }
  }

  /** The objects of deploy/ with {@code components} (names under deploy/components). */
  static List<JsonNode> render(String... components) throws IOException, InterruptedException {
    Path dir = ROOT.resolve("target/kustomize-test/" + (components.length == 0 ? "base" : String.join("+", components)));
    Files.createDirectories(dir);
    Path up = dir.relativize(ROOT);
    StringBuilder k = new StringBuilder("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n")
        .append("resources:\n  - ").append(up.resolve("deploy")).append('\n');
    if (components.length > 0) {
      k.append("components:\n");
      for (String c : components) {
        k.append("  - ").append(up.resolve("deploy/components").resolve(c)).append('\n');
      }
    }
    return renderIn(dir, k.toString());
  }

  /**
   * The objects of an operator's own {@code kustomization} (the text as documented, {@code <path>} standing for
   * the repository's root), rendered under target/kustomize-test/{@code name}.
   */
  static List<JsonNode> renderOwn(String name, String kustomization) throws IOException, InterruptedException {
    return renderOwn(name, kustomization, java.util.Map.of());
  }

  /** {@link #renderOwn(String, String)} with {@code files} (name to text) beside the kustomization. */
  static List<JsonNode> renderOwn(String name, String kustomization, java.util.Map<String, String> files)
      throws IOException, InterruptedException {
    Path dir = ROOT.resolve("target/kustomize-test/" + name);
    Files.createDirectories(dir);
    for (var file : files.entrySet()) {
      Files.writeString(dir.resolve(file.getKey()), file.getValue());
    }
    return renderIn(dir, kustomization.replace("<path>", dir.relativize(ROOT).toString()));
  }

  private static List<JsonNode> renderIn(Path dir, String kustomization) throws IOException, InterruptedException {
    Files.writeString(dir.resolve("kustomization.yaml"), kustomization);
    Path stderr = dir.resolve("stderr.txt");
    Process p = new ProcessBuilder("kubectl", "kustomize", dir.toString()).redirectError(stderr.toFile()).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("kubectl kustomize finished").isTrue();
    assertThat(p.exitValue()).as("kubectl kustomize %s: %s", dir, Files.readString(stderr)).isZero();
    List<JsonNode> docs = new ArrayList<>();
    try (var parser = YAML.getFactory().createParser(out)) {
      for (var it = YAML.readValues(parser, JsonNode.class); it.hasNext(); ) {
        JsonNode doc = it.next();
        if (doc != null && !doc.isNull() && !doc.isMissingNode()) {
          docs.add(doc);
        }
      }
    }
    return docs;
  }

  /** "Kind/namespace/name" of each object, sorted: the summary printed for the report. */
  static List<String> summary(List<JsonNode> objects) {
    return objects.stream().map(Kustomize::id).sorted().collect(Collectors.toList());
  }

  static String id(JsonNode o) {
    String ns = o.path("metadata").path("namespace").asText();
    return o.path("kind").asText() + "/" + (ns.isEmpty() ? "" : ns + "/") + o.path("metadata").path("name").asText();
  }

  static List<JsonNode> ofKind(List<JsonNode> objects, String kind) {
    return objects.stream().filter(o -> kind.equals(o.path("kind").asText())).collect(Collectors.toList());
  }

  static JsonNode one(List<JsonNode> objects, String kind) {
    List<JsonNode> found = ofKind(objects, kind);
    assertThat(found).as("rendered objects of kind %s", kind).hasSize(1);
    return found.get(0);
  }
}
