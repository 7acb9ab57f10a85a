package io.egressservice.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The class list the image's AppCDS archive is dumped from (Dockerfile) must describe the agent as it is:
 * a class renamed or removed since the training run is no longer archived, so a list that has gone stale
 * quietly costs the memory the archive saves. Regenerate it, as root, with {@code bench/agent-latency.sh
 * classlist}.
 */
class AppCdsClassListTest {
  static final Path CLASS_LIST = Path.of("agent", "src", "main", "appcds", "agent.classlist");

  /** The class names of the list ("name id: N ..." lines; comments and @-directives are not classes). */
  static List<String> classes() throws IOException {
    return Files.readAllLines(CLASS_LIST).stream()
        .filter(l -> !l.isBlank() && !l.startsWith("#") && !l.startsWith("@"))
        .map(l -> l.split(" ", 2)[0])
        .toList();
  }

  @Test
  void everyAgentClassOfTheListStillExists() throws IOException {
    List<String> agentClasses = classes().stream().filter(c -> c.startsWith("io/egressservice/")).toList();
    assertThat(agentClasses).as("agent classes in %s", CLASS_LIST).hasSizeGreaterThan(100);
    List<String> gone = agentClasses.stream()
        // generated at run time (lambdas, JNA's interface proxies): named by the JVM, never found as resources
        .filter(c -> !c.contains("$$Lambda") && !c.contains("/$Proxy"))
        .filter(c -> getClass().getClassLoader().getResource(c + ".class") == null)
        .toList();
    assertThat(gone).as("classes in %s that no longer exist: regenerate it as root with "
        + "'bench/agent-latency.sh classlist'", CLASS_LIST).isEmpty();
  }

  @Test
  void theListComesFromTheNodeJarAndTheRunCommand() throws IOException {
    List<String> classes = classes();
    assertThat(classes).as("the training run is the node agent ('run'), with its informers, dataplane and allocator")
        .contains("io/egressservice/cli/RunCommand", "io/egressservice/controller/NodeAgent",
            "io/egressservice/dataplane/Dataplane", "io/egressservice/allocator/Allocator",
            "io/egressservice/informers/ClusterInformers", "io/egressservice/kernel/linux/Libnftables");
    assertThat(classes).as("the node jar has no embedded API server: the list must not name its classes")
        .noneMatch(c -> c.startsWith("io/fabric8/mockwebserver/") || c.startsWith("io/vertx/")
            || c.startsWith("io/netty/") || c.startsWith("org/bouncycastle/"));
    assertThat(classes).as("the agent never loads the demo or the namespace cluster (they need the mock API server)")
        .noneMatch(c -> c.startsWith("io/egressservice/demo/") || c.startsWith("io/egressservice/testbed/"));
  }
}
