package io.egressservice.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The image's entrypoint, {@code src/main/image/launcher.c}, built here with its paths pointed at this build (the
 * test's JVM, the classpath for the jar) and run with the DaemonSet's own environment: the JVM options the chart and
 * deploy/ give it reach java's command line, where the JVM prints nothing about them, so under
 * {@code EGRESS_AGENT_LOG_FORMAT=json} every line on stderr is the agent's JSON.
 */
class LauncherTest {
  private static final Path ROOT = Path.of("").toAbsolutePath();
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String IMAGE_JAVA = "/opt/egress-service-agent/jre/bin/java";
  private static final String IMAGE_JAR = "/opt/egress-service-agent/egress-service-agent.jar";

  @TempDir Path dir;
  /** The launcher with the recorder as java, compiled once for the class. */
  @TempDir static Path shared;
  private static Path recordingLauncher;

  @Test
  void withTheDaemonSetsEnvironmentEveryStderrLineIsJson() throws Exception {
    Path launcher = build(dir, Path.of(System.getProperty("java.home"), "bin", "java").toString(), true);
    Map<String, String> env = literalEnv(daemonSetContainer());
    assertThat(env).as("the JVM's options are set for the launcher, not for the JVM to pick up")
        .containsKey("EGRESS_AGENT_JVM_OPTIONS").doesNotContainKeys("JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS");
    env.put("EGRESS_AGENT_LOG_FORMAT", "json");

    // a user error: the command line's own message on stderr, exit 1
    Result r = run(launcher, env, "io.egressservice.cli.Main", "plan", "--objects", dir.resolve("none.yaml").toString(),
        "--node", "node-a");

    assertThat(r.exit()).as(r.err()).isEqualTo(1);
    assertThat(r.err().lines().toList()).as("stderr").isNotEmpty().allSatisfy(line -> {
      JsonNode n = JSON.readTree(line);
      assertThat(n.isObject()).as(line).isTrue();
      assertThat(n.path("level").asText()).as(line).isNotEmpty();
    });
  }

  @Test
  void jvmOptionsGoBeforeTheEntrypointsOwnFlagsAndTheArgumentsAfterTheJar() throws Exception {
    Path launcher = recordingLauncher();

    Result r = run(launcher, Map.of("EGRESS_AGENT_JVM_OPTIONS", " -Xss512k\t-Dx=1\n -XX:-ExitOnOutOfMemoryError "),
        "status", "--netns", "a b");

    assertThat(r.exit()).as(r.err()).isZero();
    assertThat(r.out().lines().toList()).containsExactly("-Xss512k", "-Dx=1", "-XX:-ExitOnOutOfMemoryError",
        "-XX:+ExitOnOutOfMemoryError", "-XX:SharedArchiveFile=/opt/egress-service-agent/agent.jsa", "-jar", IMAGE_JAR,
        "status", "--netns", "a b", "JAVA_TOOL_OPTIONS=unset");
  }

  @Test
  void withoutJvmOptionsTheEntrypointRunsAsItIs() throws Exception {
    Path launcher = recordingLauncher();

    Result r = run(launcher, Map.of(), "--version");

    assertThat(r.out().lines().toList()).containsExactly("-XX:+ExitOnOutOfMemoryError",
        "-XX:SharedArchiveFile=/opt/egress-service-agent/agent.jsa", "-jar", IMAGE_JAR, "--version",
        "JAVA_TOOL_OPTIONS=unset");
  }

  @Test
  void aQuotedJvmOptionIsRefusedWithTheVariablesName() throws Exception {
    Path launcher = recordingLauncher();

    Result r = run(launcher, Map.of("EGRESS_AGENT_JVM_OPTIONS", "-Dname='a b'"), "status");

    assertThat(r.exit()).isEqualTo(127);
    assertThat(r.out()).as("java is not run").isEmpty();
    assertThat(r.err()).contains("EGRESS_AGENT_JVM_OPTIONS has a quote");
  }

  private static synchronized Path recordingLauncher() throws Exception {
    if (recordingLauncher == null) {
      recordingLauncher = build(shared, recorder(shared).toString(), false);
    }
    return recordingLauncher;
  }

  /** The launcher, with java at {@code java} and (for a real JVM) the jar replaced by this build's classpath. */
  private static Path build(Path dir, String java, boolean classpath) throws Exception {
    assumeThat(Path.of("/usr/bin/cc")).as("a C compiler (scripts/setup.sh installs gcc)").exists();
    String source = Files.readString(ROOT.resolve("agent/src/main/image/launcher.c"));
    assertThat(source).contains("\"" + IMAGE_JAVA + "\"", "\"-jar\"", "\"" + IMAGE_JAR + "\"");
    source = source.replace("\"" + IMAGE_JAVA + "\"", cString(java));
    if (classpath) {
      source = source.replace("\"-jar\"", "\"-cp\"")
          .replace("\"" + IMAGE_JAR + "\"", cString(System.getProperty("java.class.path")));
    }
    Path c = Files.writeString(dir.resolve("launcher.c"), source);
    Path out = dir.resolve("egress-service-agent");
    Result cc = exec(List.of("cc", "-Os", "-Wall", "-Wextra", "-Werror", "-o", out.toString(), c.toString()), Map.of(),
        true);
    assertThat(cc.exit()).as(cc.err()).isZero();
    return out;
  }

  /** A stand-in for java that prints its arguments, one a line, and whether JAVA_TOOL_OPTIONS is set. */
  private static Path recorder(Path dir) throws IOException {
    Path script = dir.resolve("java");
    Files.writeString(script, "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done\n"
        + "echo \"JAVA_TOOL_OPTIONS=${JAVA_TOOL_OPTIONS-unset}\"\n");
    assertThat(script.toFile().setExecutable(true)).isTrue();
    return script;
  }

  private static String cString(String s) {
    return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
  }

  private static Container daemonSetContainer() throws IOException {
    DaemonSet ds = new KubernetesSerialization().unmarshal(Files.readString(ROOT.resolve("deploy/daemonset.yaml")),
        DaemonSet.class);
    return ds.getSpec().getTemplate().getSpec().getContainers().get(0);
  }

  /** The container's environment variables with a literal value (the downward API's are not needed here). */
  private static Map<String, String> literalEnv(Container c) {
    Map<String, String> env = new java.util.TreeMap<>();
    for (EnvVar e : c.getEnv()) {
      if (e.getValue() != null) {
        env.put(e.getName(), e.getValue());
      }
    }
    return env;
  }

  private record Result(int exit, String out, String err) {}

  private static Result run(Path launcher, Map<String, String> env, String... args) throws Exception {
    List<String> command = new ArrayList<>(List.of(launcher.toString()));
    command.addAll(List.of(args));
    return exec(command, env, false);
  }

  private static Result exec(List<String> command, Map<String, String> env, boolean inherit) throws Exception {
    ProcessBuilder pb = new ProcessBuilder(command);
    if (!inherit) {
      pb.environment().keySet().removeIf(k -> !k.equals("PATH"));
    }
    pb.environment().putAll(env);
    Path out = Files.createTempFile("launcher", ".out");
    Path err = Files.createTempFile("launcher", ".err");
    try {
      Process p = pb.redirectOutput(out.toFile()).redirectError(err.toFile()).start();
      if (!p.waitFor(60, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new AssertionError("no exit within 60 s: " + command);
      }
      return new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8),
          Files.readString(err, StandardCharsets.UTF_8));
    } finally {
      Files.deleteIfExists(out);
      Files.deleteIfExists(err);
    }
  }
}
