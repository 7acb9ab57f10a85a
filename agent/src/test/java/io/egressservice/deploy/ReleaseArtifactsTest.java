package io.egressservice.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.StreamSupport;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The cheap parts of scripts/release.sh, each on its own: the chart package, the install manifests, the image's
 * SBOM merged from an image archive (a small one made here with scripts/image/oci-archive.py), SHA256SUMS. The
 * full run builds the image and is not part of the suite: {@code sudo scripts/release.sh} (docs/install.md).
 */
class ReleaseArtifactsTest {
  private static final Path ROOT = Path.of("").toAbsolutePath();
  private static final ObjectMapper JSON = new ObjectMapper();
  /** The image archive of the SBOM tests that need only the described jar: made once (a python run each). */
  @TempDir static Path shared;
  private static Path describedImage;

  private static synchronized Path describedImage() throws Exception {
    if (describedImage == null) {
      describedImage = imageArchive(shared, List.of("jackson-core-2.17.2.jar"));
    }
    return describedImage;
  }

  @Test
  void theChartPackageHoldsTheWholeChartAndRendersEveryPresetAsTheDirectoryDoes(@TempDir Path out) throws Exception {
    Path tgz = ReleaseArtifacts.chartPackage(out);
    assertThat(tgz.getFileName().toString()).isEqualTo("egress-service-agent-" + VersionAgreementTest.pomVersion() + ".tgz");
    List<String> entries = tarEntries(tgz);
    assertThat(entries).allMatch(e -> e.startsWith("egress-service-agent/"))
        .contains("egress-service-agent/Chart.yaml", "egress-service-agent/values.yaml",
            "egress-service-agent/values.schema.json", "egress-service-agent/templates/daemonset.yaml",
            "egress-service-agent/files/prometheus-rules.yaml");
    try (var files = Files.walk(HelmChart.CHART)) {
      List<String> chartFiles = files.filter(Files::isRegularFile)
          .map(f -> "egress-service-agent/" + HelmChart.CHART.relativize(f)).sorted().collect(Collectors.toList());
      assertThat(entries).as("every file of the chart's directory is in the package").containsAll(chartFiles);
    }
  }

  @Test
  void everyPresetGetsItsOwnInstallManifestOfTheObjectsKustomizeRenders(@TempDir Path out) throws Exception {
    Kustomize.unavailable().ifPresent(reason -> Assumptions.assumeTrue(false, reason));
    List<Path> manifests = ReleaseArtifacts.installManifests(out);
    System.out.println("install manifests: " + manifests.stream().map(p -> p.getFileName().toString()).toList());
    assertThat(manifests).hasSize(ChartTest.PRESETS.size()).doesNotHaveDuplicates()
        .allMatch(p -> p.getFileName().toString().matches("install-[a-z0-9-]+\\.yaml"));
    assertThat(out.resolve("install-default.yaml")).exists();
    for (Path manifest : manifests) {
      String text = Files.readString(manifest);
      assertThat(text).startsWith("# egress-service-agent " + VersionAgreementTest.pomVersion() + ", preset ");
      List<JsonNode> objects = HelmChart.parse(text);
      assertThat(Kustomize.summary(objects)).as(manifest.getFileName().toString())
          .contains("Namespace/egress-service-agent", "DaemonSet/egress-service-agent/egress-service-agent");
    }
    assertThat(Kustomize.summary(HelmChart.parse(Files.readString(out.resolve("install-default.yaml")))))
        .as("the default preset installs the CRD too").contains("CustomResourceDefinition/egressservices.k8s.ovn.org");
    ReleaseArtifacts.checkInstallManifest(out.resolve("install-default.yaml"));
  }

  @Test
  void presetsWithTheSameWordsInOtherComponentsGetDistinctManifestNames() {
    assertThat(ChartTest.PRESETS.stream().map(ReleaseArtifacts::manifestName)).doesNotHaveDuplicates();
    assertThat(ReleaseArtifacts.manifestName(new ChartTest.Preset("openshift", Map.of(),
        List.of("ovn-kubernetes-openshift", "openshift")))).isEqualTo("install-ovn-kubernetes-openshift.yaml");
  }

  @Test
  void theImageSbomListsTheJarsTheRuntimeAndTheDebianPackagesAsOneValidCycloneDxDocument(@TempDir Path dir)
      throws Exception {
    Path archive = describedImage();
    Process merge = python(dir, "scripts/release/image-sbom-merge.py", archive.toString(),
        "--jdk-package", "openjdk-17-jdk-headless=17.0.15+6-1~deb12u1",
        "--repository", "ghcr.io/egress-service-agent/egress-service-agent");
    Path sbom = dir.resolve("image.sbom.cdx.json");
    Files.write(sbom, merge.getInputStream().readAllBytes());
    assertThat(merge.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(merge.exitValue()).as(Files.readString(dir.resolve("stderr.txt"))).isZero();

    JsonNode bom = JSON.readTree(sbom.toFile());
    assertThat(ReleaseArtifacts.schemaViolations(sbom, bom)).as("CycloneDX schema violations").isEmpty();
    JsonNode image = bom.path("metadata").path("component");
    String manifestDigest = manifestDigest(archive);
    assertThat(image.path("type").asText()).isEqualTo("container");
    assertThat(image.path("purl").asText()).startsWith("pkg:oci/egress-service-agent@" + manifestDigest.replace(":", "%3A"))
        .contains("arch=amd64", "repository_url=ghcr.io/egress-service-agent/egress-service-agent", "tag=0.3.0");
    Map<String, JsonNode> byPurl = StreamSupport.stream(bom.path("components").spliterator(), false)
        .filter(c -> c.has("purl")).collect(Collectors.toMap(c -> c.path("purl").asText(), c -> c));
    assertThat(byPurl).containsKeys(
        "pkg:deb/debian/libc6@2.36-9%2Bdeb12u10?arch=amd64&distro=debian-12",
        "pkg:deb/debian/libnftables1@1.0.6-2%2Bdeb12u2?arch=amd64&distro=debian-12",
        "pkg:maven/com.fasterxml.jackson.core/jackson-core@2.17.2?type=jar");
    JsonNode jre = byPurl.get("pkg:deb/debian/openjdk-17-jdk-headless@17.0.15%2B6-1~deb12u1?arch=amd64&distro=debian-12");
    assertThat(jre).as("the runtime, by the JDK package it was jlink'ed from").isNotNull();
    assertThat(jre.path("type").asText()).isEqualTo("platform");
    assertThat(jre.path("version").asText()).isEqualTo("17.0.15");
    assertThat(StreamSupport.stream(bom.path("components").spliterator(), false).map(c -> c.path("type").asText()))
        .as("the project's component is the image's application").contains("application", "operating-system");
    assertThat(dependsOn(bom, "pkg:deb/debian/libnftables1@1.0.6-2%2Bdeb12u2?arch=amd64&distro=debian-12"))
        .as("Depends among the image's packages (libjansson4 is not in this image)")
        .containsExactly("pkg:deb/debian/libc6@2.36-9%2Bdeb12u10?arch=amd64&distro=debian-12");
    assertThat(dependsOn(bom, "image")).hasSize(1 + 1 + 1 + 2);
  }

  @Test
  void aJarOfTheImageThatTheSbomDoesNotDescribeFailsTheMerge(@TempDir Path dir) throws Exception {
    Path archive = imageArchive(dir, List.of("jackson-core-2.17.2.jar", "smuggled-1.0.jar"));
    Process merge = python(dir, "scripts/release/image-sbom-merge.py", archive.toString());
    merge.getInputStream().readAllBytes();
    assertThat(merge.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(merge.exitValue()).isNotZero();
    assertThat(Files.readString(dir.resolve("stderr.txt"))).contains("describes the image's smuggled-1.0.jar");
  }

  @Test
  void aJdkPackageOfAnotherJavaVersionThanTheImagesRuntimeFailsTheMerge(@TempDir Path dir) throws Exception {
    Path archive = describedImage();
    Process merge = python(dir, "scripts/release/image-sbom-merge.py", archive.toString(),
        "--jdk-package", "openjdk-17-jdk-headless=17.0.14+7-1~deb12u1");
    merge.getInputStream().readAllBytes();
    assertThat(merge.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(merge.exitValue()).isNotZero();
    assertThat(Files.readString(dir.resolve("stderr.txt"))).contains("is not the JDK of the image's runtime");
  }

  @Test
  void sha256SumsNamesEveryArtifactByItsBareNameForSha256sumCheck(@TempDir Path dir) throws Exception {
    Files.writeString(dir.resolve("install-default.yaml"), "kind: Namespace\n");
    Files.write(dir.resolve("egress-service-agent-0.3.0.tgz"), new byte[] {1, 2, 3});
    assertThat(run(dir, "bash", ROOT.resolve("scripts/release/checksums.sh").toString(), dir.toString())).isZero();
    List<String> lines = Files.readAllLines(dir.resolve("SHA256SUMS"));
    assertThat(lines).containsExactly(
        sha256(dir.resolve("egress-service-agent-0.3.0.tgz")) + "  egress-service-agent-0.3.0.tgz",
        sha256(dir.resolve("install-default.yaml")) + "  install-default.yaml");
    assertThat(run(dir, "sha256sum", "--quiet", "-c", "SHA256SUMS")).isZero();
    Files.writeString(dir.resolve("install-default.yaml"), "kind: Namespace\n# changed\n");
    assertThat(run(dir, "sha256sum", "--quiet", "-c", "SHA256SUMS")).as("a changed artifact is caught").isNotZero();
  }

  /**
   * A small image archive as scripts/build-image.sh lays it out: a base with two Debian packages' status files
   * and os-release, a runtime's release file, the jars, and the Java libraries' SBOM in the application layer.
   */
  private static Path imageArchive(Path dir, List<String> jars) throws Exception {
    Path base = Files.createDirectories(dir.resolve("base/var/lib/dpkg/status.d"));
    Files.writeString(base.resolve("libc6"), "Package: libc6\nSource: glibc\nVersion: 2.36-9+deb12u10\n"
        + "Architecture: amd64\nMaintainer: GNU Libc Maintainers <debian-glibc@lists.debian.org>\n"
        + "Description: GNU C Library: Shared libraries\n Contains the standard libraries.\nStatus: install ok installed\n");
    Files.writeString(base.resolve("libnftables1"), "Package: libnftables1\nSource: nftables\n"
        + "Version: 1.0.6-2+deb12u2\nArchitecture: amd64\nDepends: libc6 (>= 2.34), libjansson4 (>= 2.14)\n"
        + "Description: Netfilter nftables high level userspace API library\nStatus: install ok installed\n");
    Files.createDirectories(dir.resolve("base/etc"));
    Files.writeString(dir.resolve("base/etc/os-release"),
        "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\nVERSION_ID=\"12\"\n");
    Path jre = Files.createDirectories(dir.resolve("runtime/opt/egress-service-agent/jre"));
    Files.writeString(jre.resolve("release"), "JAVA_VERSION=\"17.0.15\"\nMODULES=\"java.base jdk.crypto.ec\"\n");
    Path lib = Files.createDirectories(dir.resolve("dependencies/opt/egress-service-agent/lib"));
    for (String jar : jars) {
      Files.write(lib.resolve(jar), new byte[0]);
    }
    Path doc = Files.createDirectories(dir.resolve("application/usr/share/doc/egress-service-agent"));
    Files.writeString(doc.resolve("sbom.cdx.json"), """
        {"bomFormat": "CycloneDX", "specVersion": "1.6", "version": 1,
         "metadata": {"tools": {"components": []},
                      "component": {"type": "library", "bom-ref": "pkg:maven/io.egressservice/agent@0.3.0?type=jar",
                                    "group": "io.egressservice", "name": "agent", "version": "0.3.0",
                                    "purl": "pkg:maven/io.egressservice/agent@0.3.0?type=jar"}},
         "components": [{"type": "library", "bom-ref": "pkg:maven/com.fasterxml.jackson.core/jackson-core@2.17.2?type=jar",
                         "group": "com.fasterxml.jackson.core", "name": "jackson-core", "version": "2.17.2",
                         "purl": "pkg:maven/com.fasterxml.jackson.core/jackson-core@2.17.2?type=jar"}],
         "dependencies": [{"ref": "pkg:maven/io.egressservice/agent@0.3.0?type=jar",
                           "dependsOn": ["pkg:maven/com.fasterxml.jackson.core/jackson-core@2.17.2?type=jar"]}]}
        """);
    Files.writeString(dir.resolve("config.json"), "{\"User\": \"65532\", \"Labels\": "
        + "{\"org.opencontainers.image.version\": \"0.3.0\", \"org.opencontainers.image.title\": \"egress-service-agent\"}}");
    Path archive = dir.resolve("image.oci.tar");
    List<String> args = new ArrayList<>(List.of("python3", "scripts/image/oci-archive.py", archive.toString(),
        "--created", "2026-01-01T00:00:00Z", "--architecture", "amd64", "--config", dir.resolve("config.json").toString(),
        "--ref-name", "0.3.0"));
    for (String layer : List.of("base", "runtime", "dependencies", "application")) {
      args.addAll(List.of("--layer", layer + "=" + dir.resolve(layer)));
    }
    assertThat(run(dir, args.toArray(String[]::new))).as("oci-archive.py").isZero();
    return archive;
  }

  private static List<String> dependsOn(JsonNode bom, String ref) {
    List<String> refs = new ArrayList<>();
    bom.path("dependencies").forEach(d -> {
      if (d.path("ref").asText().equals(ref)) {
        d.path("dependsOn").forEach(r -> refs.add(r.asText()));
      }
    });
    return refs;
  }

  private static String manifestDigest(Path archive) throws IOException {
    for (var entry : tarEntries(archive, false).entrySet()) {
      if (entry.getKey().equals("index.json")) {
        return JSON.readTree(entry.getValue()).path("manifests").path(0).path("digest").asText();
      }
    }
    throw new AssertionError("no index.json in " + archive);
  }

  private static Process python(Path dir, String... args) throws IOException {
    List<String> command = new ArrayList<>(List.of("python3"));
    command.addAll(List.of(args));
    return new ProcessBuilder(command).directory(ROOT.toFile())
        .redirectError(dir.resolve("stderr.txt").toFile()).start();
  }

  private static int run(Path dir, String... command) throws Exception {
    Process p = new ProcessBuilder(command).directory(command[0].equals("python3") ? ROOT.toFile() : dir.toFile())
        .redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("%s finished", command[0]).isTrue();
    if (p.exitValue() != 0) {
      System.out.println(String.join(" ", command) + ": " + out);
    }
    return p.exitValue();
  }

  private static String sha256(Path file) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(file)));
  }

  private static List<String> tarEntries(Path tgz) throws IOException {
    return new ArrayList<>(tarEntries(tgz, true).keySet());
  }

  /** The entries of a tar (gzip'ed or not), names to contents (small archives only). */
  private static Map<String, byte[]> tarEntries(Path tar, boolean gzip) throws IOException {
    Map<String, byte[]> entries = new java.util.LinkedHashMap<>();
    try (InputStream raw = Files.newInputStream(tar);
        InputStream in = gzip ? new GZIPInputStream(raw) : raw;
        var archive = new org.apache.commons.compress.archivers.tar.TarArchiveInputStream(in)) {
      for (var e = archive.getNextEntry(); e != null; e = archive.getNextEntry()) {
        if (e.isFile()) {
          entries.put(e.getName(), archive.readAllBytes());
        }
      }
    }
    return entries;
  }
}
