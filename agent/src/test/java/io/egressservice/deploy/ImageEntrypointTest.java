package io.egressservice.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The image's two builds, the {@code Dockerfile} (CI, the release) and {@code scripts/build-image.sh} (no
 * container engine), must give the same image config: the entrypoint (with -XX:+ExitOnOutOfMemoryError, which a
 * JAVA_TOOL_OPTIONS of one's own cannot lose), the PATH on which {@code egress-service-agent} is found, the user and
 * the OCI annotations. The Dockerfile is their one definition; the script reads it. The entrypoint is the launcher on
 * PATH ({@code src/main/image/launcher.c}), which holds the JVM's command line ({@link LauncherTest} runs it). The image build itself is not run here (it needs
 * root and minutes): these compare the definitions, the script's through its own {@code --print-config}; the files
 * generated from the command line for the image (completion, man page) are made here by the script both builds run.
 */
class ImageEntrypointTest {
  private static final Path ROOT = Path.of("").toAbsolutePath();
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String LAUNCHER = "/usr/local/bin/egress-service-agent";
  private static final List<String> JVM_COMMAND = List.of(
      "/opt/egress-service-agent/jre/bin/java", "-XX:+ExitOnOutOfMemoryError",
      "-XX:SharedArchiveFile=/opt/egress-service-agent/agent.jsa",
      "-jar", "/opt/egress-service-agent/egress-service-agent.jar");

  @Test
  void dockerfileEntrypointIsTheLauncherOnPath() throws IOException {
    assertThat(dockerfileEntrypoint()).as("exec form, no shell").containsExactly(LAUNCHER);
  }

  @Test
  void launcherRunsTheAgentJarOnTheJlinkedRuntimeAndExitsOnOutOfMemory() throws IOException {
    String launcher = Files.readString(ROOT.resolve("agent/src/main/image/launcher.c"));
    Matcher array = Pattern.compile("ENTRYPOINT\\[\\] = \\{(.*?)\\};", Pattern.DOTALL).matcher(launcher);
    assertThat(array.find()).as("launcher.c declares ENTRYPOINT[]").isTrue();
    List<String> words = new ArrayList<>();
    Matcher literal = Pattern.compile("\"([^\"\\\\]*)\"").matcher(array.group(1));
    while (literal.find()) {
      words.add(literal.group(1));
    }
    assertThat(words).isEqualTo(JVM_COMMAND);
    assertThat(launcher).as("it replaces itself, so signals reach the JVM").contains("execv(ENTRYPOINT[0], args)");
  }

  @Test
  void buildImageScriptWritesTheDockerfilesEntrypointPathUserAndAnnotations() throws Exception {
    JsonNode config = buildImageConfig();
    List<String> entrypoint = new ArrayList<>();
    config.path("Entrypoint").forEach(word -> entrypoint.add(word.asText()));
    assertThat(entrypoint).isEqualTo(dockerfileEntrypoint());

    String dockerfile = lastStage();
    assertThat(config.path("User").asText()).isEqualTo(instruction(dockerfile, "USER")).isEqualTo("65532:65532");
    String path = instruction(dockerfile, "ENV");
    assertThat(path).as("the launcher's directory is on PATH").startsWith("PATH=/usr/local/bin:");
    assertThat(config.path("Env").get(0).asText()).isEqualTo(path);

    JsonNode labels = config.path("Labels");
    for (String key : List.of("version", "revision", "created", "source", "url", "licenses", "base.name")) {
      assertThat(labels.path("org.opencontainers.image." + key).asText()).as(key).isNotBlank();
    }
    assertThat(labels.path("org.opencontainers.image.version").asText()).isEqualTo(pomVersion());
    assertThat(labels.path("org.opencontainers.image.licenses").asText()).isEqualTo("Apache-2.0");
    assertThat(labels.path("org.opencontainers.image.created").asText())
        .matches("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ");
  }

  @Test
  void imageLayersGoFromBaseToApplicationWithoutShellOrPackageManager() throws IOException {
    String dockerfile = Files.readString(ROOT.resolve("Dockerfile"));
    List<String> stages = List.of(dockerfile.split("(?m)^FROM "));
    assertThat(stages.get(1)).startsWith("--platform=$BUILDPLATFORM maven:3-eclipse-temurin-17 ")
        .containsPattern("mvn -B -Psbom -DskipTests [^\\n]*package");
    String image = lastStage();
    assertThat(image).as("nothing of a distribution but the libraries the base layer takes").startsWith("scratch");
    assertThat(image.lines().filter(l -> l.startsWith("COPY ")).toList()).as("least to most often changed")
        .containsExactly(
            "COPY --from=assemble /out/base/ /",
            "COPY --from=assemble /out/runtime/ /",
            "COPY --from=build /src/target/image/lib/ /opt/egress-service-agent/lib/",
            "COPY --from=assemble /out/application/ /");
    assertThat(image).as("the AppCDS archive is dumped from the committed class list, against the jar at its path")
        .containsPattern("-Xshare:dump[^\\n]*-XX:SharedClassListFile=/tmp/agent.classlist")
        .contains("\"-XX:SharedArchiveFile=/opt/egress-service-agent/agent.jsa\", \"-cp\", "
            + "\"/opt/egress-service-agent/egress-service-agent.jar\"");
    assertThat(dockerfile).as("both builds take the runtime and the base from the same scripts")
        .contains("scripts/image/jre.sh ", "scripts/image/base-rootfs.sh ");

    String script = Files.readString(ROOT.resolve("scripts/build-image.sh"));
    assertThat(script).contains("scripts/image/jre.sh ", "scripts/image/base-rootfs.sh ", "-Xshare:dump");
    assertThat(List.of(script.indexOf("--layer \"base:"), script.indexOf("--layer \"runtime:"),
        script.indexOf("--layer \"dependencies:"), script.indexOf("--layer \"application:")))
        .as("the script's layers in the Dockerfile's order").doesNotContain(-1).isSorted();

    assertThat(Files.readAllLines(ROOT.resolve(".dockerignore"))).contains("target/", ".git");
  }

  /**
   * The version the engine-less build stamps on the image comes from a file the build writes: after the module
   * split it is in the agent module's classes, not the repository's (it read a file that no longer existed).
   */
  @Test
  void theEngineLessBuildReadsItsVersionFromAFileTheBuildWrites() throws IOException {
    String script = Files.readString(ROOT.resolve("scripts/build-image.sh"));
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?m)^version=\\$\\(sed -n '[^']*' (\\S+)\\)$")
        .matcher(script);
    assertThat(m.find()).as("build-image.sh reads the version with sed").isTrue();
    assertThat(ROOT.resolve(m.group(1))).as("the file it reads (written when the agent module compiles)")
        .isRegularFile();
    assertThat(Files.readString(ROOT.resolve(m.group(1)))).containsPattern("(?m)^version=\\S+");
  }

  /** Where the image carries what a user's shell, man and kubectl read (scripts/image/cli-files.sh). */
  private static final String COMPLETION = "usr/share/bash-completion/completions/egress-service-agent";
  private static final String MAN_PAGE = "usr/share/man/man8/egress-service-agent.8";
  private static final String KUBECTL_PLUGIN = "usr/local/bin/kubectl-egress_service";

  @Test
  void bothImageBuildsGenerateCompletionAndManPageOnTheImagesRuntimeAndInstallTheKubectlPlugin() throws IOException {
    String dockerfile = Files.readString(ROOT.resolve("Dockerfile"));
    String[] stages = dockerfile.split("(?m)^FROM ");
    String assemble = List.of(stages).stream().filter(st -> st.contains(" AS assemble")).findFirst().orElseThrow();
    assertThat(assemble).as("the plugin reaches the stage that installs it")
        .contains("\nCOPY scripts/kubectl-egress_service ./scripts/kubectl-egress_service\n")
        .contains("\nCOPY scripts/image ./scripts/image\n");
    String run = "RUN scripts/image/cli-files.sh /out/runtime/opt/egress-service-agent/jre/bin/java \\\n"
        + "      \"target/egress-service-agent-image.jar:target/image/lib/*\" /out/application\n";
    assertThat(assemble).as("generated by the agent's jar on the jlink'ed JRE, into the application tree")
        .contains(run).contains("\nARG SOURCE_DATE_EPOCH\n");
    assertThat(assemble.indexOf(run)).as("after the JRE exists")
        .isGreaterThan(assemble.indexOf("scripts/image/jre.sh target/egress-service-agent-image.jar"));
    assertThat(lastStage()).as("the application tree is the image's last layer")
        .contains("\nCOPY --from=assemble /out/application/ /\n");

    String script = Files.readString(ROOT.resolve("scripts/build-image.sh"));
    assertThat(script).as("the engine-less build runs the same script on its runtime, dated like its layers")
        .contains("SOURCE_DATE_EPOCH=$epoch scripts/image/cli-files.sh \"$L/runtime$APP/jre/bin/java\" "
            + "\"$JAR:target/image/lib/*\" \\\n  \"$L/application\"\n");
    assertThat(script.indexOf("scripts/image/cli-files.sh")).as("before the layers' mtimes are fixed")
        .isLessThan(script.indexOf("touch -h -d \"@$epoch\""));

    String cliFiles = Files.readString(ROOT.resolve("scripts/image/cli-files.sh"));
    assertThat(cliFiles).as("the usual places")
        .contains("\"$dest/" + COMPLETION + "\" completion\n", "\"$dest/" + MAN_PAGE + "\" man\n",
            "install -D -m 0755 \"$here/scripts/kubectl-egress_service\" \"$dest/" + KUBECTL_PLUGIN + "\"\n");
  }

  @Test
  void cliFilesScriptWritesTheCompletionAndManPageOfTheModelAndTheKubectlPlugin(@TempDir Path tree)
      throws Exception {
    ProcessBuilder pb = new ProcessBuilder("bash", "scripts/image/cli-files.sh",
        Path.of(System.getProperty("java.home"), "bin", "java").toString(), System.getProperty("java.class.path"),
        tree.toString()).directory(ROOT.toFile()).redirectErrorStream(true);
    pb.environment().put("SOURCE_DATE_EPOCH", "1700000000");
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(out).isZero();

    String completion = Files.readString(tree.resolve(COMPLETION));
    assertThat(completion).as("picocli's bash completion of the agent, with its commands")
        .contains("complete -F _complete_egress-service-agent", "explain", "status", "--netns");
    String page = Files.readString(tree.resolve(MAN_PAGE));
    assertThat(page).as("section 8, dated SOURCE_DATE_EPOCH (2023-11-14), one section per command")
        .startsWith(".TH EGRESS-SERVICE-AGENT 8 \"2023-11-14\" ")
        .contains("\n.SH COMMAND EXPLAIN\n", "\n.SH COMMAND STATUS\n", "\n.SH COMMAND COMPLETION\n");
    Path plugin = tree.resolve(KUBECTL_PLUGIN);
    assertThat(Files.readString(plugin)).isEqualTo(Files.readString(ROOT.resolve("scripts/kubectl-egress_service")));
    assertThat(Files.getPosixFilePermissions(plugin)).as("executable, as kubectl needs")
        .contains(PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.GROUP_EXECUTE,
            PosixFilePermission.OTHERS_EXECUTE);
  }

  private static List<String> dockerfileEntrypoint() throws IOException {
    return List.of(JSON.readValue(instruction(lastStage(), "ENTRYPOINT"), String[].class));
  }

  private static String lastStage() throws IOException {
    String[] stages = Files.readString(ROOT.resolve("Dockerfile")).split("(?m)^FROM ");
    return stages[stages.length - 1];
  }

  /** The arguments of the stage's one instruction KEYWORD (a single line). */
  private static String instruction(String stage, String keyword) {
    List<String> lines = stage.lines().filter(l -> l.startsWith(keyword + " ")).toList();
    assertThat(lines).as(keyword).hasSize(1);
    return lines.get(0).substring(keyword.length() + 1).strip();
  }

  private static String pomVersion() throws IOException {
    Matcher version = Pattern.compile("(?m)^  <version>(.*)</version>$")
        .matcher(Files.readString(ROOT.resolve("pom.xml")));
    assertThat(version.find()).isTrue();
    return version.group(1);
  }

  private static JsonNode buildImageConfig() throws IOException, InterruptedException {
    Process script = new ProcessBuilder("bash", "scripts/build-image.sh", "--print-config")
        .directory(ROOT.toFile()).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    byte[] out = script.getInputStream().readAllBytes();
    assertThat(script.waitFor(30, TimeUnit.SECONDS)).isTrue();
    assertThat(script.exitValue()).as("build-image.sh --print-config: %s", new String(out, StandardCharsets.UTF_8))
        .isZero();
    return JSON.readTree(out);
  }
}
