package io.egressservice.deploy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.marcnuri.helm.Helm;
import com.marcnuri.helm.LintResult;
import io.egressservice.deploy.ChartTest.Preset;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.cyclonedx.Version;
import org.cyclonedx.exception.ParseException;
import org.cyclonedx.parsers.JsonParser;

/**
 * The parts of a release that Helm's and kustomize's own code make (scripts/release.sh runs this on the agent's
 * test classpath, where helm-java is): the chart package, checked by linting and rendering the package itself; one
 * install manifest per preset of {@link ChartTest#PRESETS}, rendered by kustomize from deploy/ and its components
 * and held to {@link ManifestChecks}; and the image's SBOM checked against the CycloneDX schema.
 *
 * <pre>ReleaseArtifacts OUT_DIR [SBOM.cdx.json]</pre>
 *
 * Run from the repository's root. Fails (an exception naming what) on the first part that does not hold.
 */
final class ReleaseArtifacts {
  private static final ObjectMapper JSON = new ObjectMapper();

  private ReleaseArtifacts() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 1 || args.length > 2) {
      throw new IllegalArgumentException("usage: ReleaseArtifacts OUT_DIR [SBOM.cdx.json]");
    }
    Path out = Path.of(args[0]);
    Files.createDirectories(out);
    Path chart = chartPackage(out);
    System.out.println("release: chart " + chart.getFileName() + ": helm lint --strict passed, "
        + ChartTest.PRESETS.size() + " presets render from the package as from charts/egress-service-agent");
    for (Path manifest : installManifests(out)) {
      checkInstallManifest(manifest);
      System.out.println("release: " + manifest.getFileName() + ": passes the RBAC, probe and securityContext checks");
    }
    if (args.length == 2) {
      System.out.println("release: " + Path.of(args[1]).getFileName() + ": " + sbomSummary(Path.of(args[1])));
    }
  }

  /**
   * {@code helm package charts/egress-service-agent -d OUT}: the package Helm names {@code <name>-<version>.tgz},
   * which passes {@code helm lint --strict} and renders every preset into the objects the chart's directory renders
   * (so nothing the templates read was left out of the archive).
   */
  static Path chartPackage(Path out) {
    JsonNode chartYaml = VersionAgreementTest.chartYaml();
    Path tgz = out.resolve(chartYaml.path("name").asText() + "-" + chartYaml.path("version").asText() + ".tgz");
    new Helm(HelmChart.CHART).packageIt().withDestination(out).call();
    if (!Files.isRegularFile(tgz)) {
      throw new IllegalStateException("helm package wrote no " + tgz);
    }
    LintResult lint = new Helm(tgz).lint().strict().call();
    if (lint.isFailed() || lint.getMessages().stream().anyMatch(m -> m.contains("[ERROR]") || m.contains("[WARNING]"))) {
      throw new IllegalStateException("helm lint --strict " + tgz + ": " + lint.getMessages());
    }
    for (Preset preset : ChartTest.PRESETS) {
      List<String> packaged = Kustomize.summary(HelmChart.parse(HelmChart.renderText(tgz, preset.values())));
      List<String> directory = Kustomize.summary(HelmChart.render(preset.values()));
      if (!packaged.equals(directory)) {
        throw new IllegalStateException("preset " + preset.name() + ": " + tgz.getFileName() + " renders " + packaged
            + ", charts/egress-service-agent renders " + directory);
      }
    }
    return tgz;
  }

  /**
   * {@code install-<preset>.yaml} for every preset: deploy/ with the preset's components as {@code kubectl
   * kustomize} prints it (the CRD, the Namespace and everything else, for {@code kubectl apply -f}). The chart's
   * randomly made probe key is not in them: deploy/ leaves the key to the install command (deploy/README.md), so
   * one manifest does not hand every cluster the same key.
   */
  static List<Path> installManifests(Path out) throws IOException, InterruptedException {
    List<Path> written = new ArrayList<>();
    for (Preset preset : ChartTest.PRESETS) {
      String yaml = Kustomize.renderText(preset.components().toArray(String[]::new));
      Path file = out.resolve(manifestName(preset));
      if (written.contains(file)) {
        throw new IllegalStateException("two presets would write " + file.getFileName());
      }
      Files.writeString(file, "# egress-service-agent " + VersionAgreementTest.pomVersion() + ", preset \""
          + preset.name() + "\": deploy/" + (preset.components().isEmpty() ? "" : " with the components "
          + String.join(", ", preset.components())) + ".\n# Install: docs/install.md, \"Release artifacts\".\n" + yaml);
      written.add(file);
    }
    return written;
  }

  /**
   * The RBAC, probe and securityContext checks of deploy/ on a written manifest: the release runs them itself, as a
   * tag can be pushed on a commit whose tests did not run (ChartTest runs the same checks on the same renderings).
   */
  static void checkInstallManifest(Path manifest) throws IOException {
    ManifestChecks.installation(manifest.getFileName().toString(), HelmChart.parse(Files.readString(manifest)));
  }

  /**
   * The preset's file name, from its components' words in order without repeats: {@code install-default.yaml},
   * {@code install-ovn-kubernetes-openshift.yaml} (components ovn-kubernetes-openshift and openshift), ...
   */
  static String manifestName(Preset preset) {
    Set<String> words = new LinkedHashSet<>();
    preset.components().forEach(c -> words.addAll(List.of(c.split("-"))));
    return "install-" + (words.isEmpty() ? "default" : String.join("-", words)) + ".yaml";
  }

  /** The SBOM's schema violations, none expected; else the count of its components by type. */
  static String sbomSummary(Path sbom) throws IOException {
    JsonNode bom = JSON.readTree(sbom.toFile());
    List<ParseException> problems = schemaViolations(sbom, bom);
    if (!problems.isEmpty()) {
      throw new IllegalStateException(sbom + " is not a valid CycloneDX " + bom.path("specVersion").asText()
          + " document: " + problems.stream().map(Throwable::getMessage).collect(Collectors.joining("; ")));
    }
    Map<String, Long> byType = new java.util.TreeMap<>();
    bom.path("components").forEach(c -> byType.merge(c.path("type").asText(), 1L, Long::sum));
    return "valid CycloneDX " + bom.path("specVersion").asText() + ", components " + byType;
  }

  static List<ParseException> schemaViolations(Path sbom, JsonNode bom) throws IOException {
    Version version = java.util.Arrays.stream(Version.values())
        .filter(v -> v.getVersionString().equals(bom.path("specVersion").asText())).findFirst()
        .orElseThrow(() -> new IllegalStateException(sbom + ": unknown specVersion " + bom.path("specVersion")));
    return new JsonParser().validate(sbom.toFile(), version);
  }
}
