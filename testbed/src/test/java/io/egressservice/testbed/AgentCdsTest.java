package io.egressservice.testbed;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The agent processes of the cluster tests start from the AppCDS archive the build dumped ({@link AgentCds}): with
 * the DaemonSet's JVM options and the agent's class path, the agent's own classes come from the archive. An archive
 * the JVM cannot map is silently ignored at an agent's start, so only this test notices the speed-up gone.
 */
class AgentCdsTest {
  @Test
  void agentProcessesLoadTheirClassesFromTheArchiveTheBuildDumped() throws IOException, InterruptedException {
    assumeTrue(!System.getProperty(AgentCds.DIRECTORY_PROPERTY, "").isBlank(),
        "the build asks for no archive (-D" + AgentCds.DIRECTORY_PROPERTY + ")");
    List<String> options = AgentCds.jvmOptions();
    assertThat(options).as("the agent's JVM options").anySatisfy(o -> assertThat(o).startsWith("-XX:SharedArchiveFile="));

    List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
    cmd.addAll(options);
    // -Xshare:on: an archive that does not map is an error here, not a slower start
    cmd.addAll(List.of("-Xshare:on", "-Xlog:class+load=info", "-cp", AgentCds.agentClassPath(),
        "io.egressservice.cli.Main", "--version"));
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    pb.environment().put("JAVA_TOOL_OPTIONS", AgentProcess.DAEMONSET_JVM_OPTIONS);
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as("exit status; output:%n%s", tail(out)).isZero();
    assertThat(out).as("where the agent's command line class came from")
        .containsPattern("io\\.egressservice\\.cli\\.Main source: shared objects file");
  }

  private static String tail(String out) {
    return out.length() > 4000 ? out.substring(out.length() - 4000) : out;
  }
}
