package io.egressservice.datapath;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.cli.InProcess;
import io.egressservice.datapath.NamespaceTopology.Probe;
import io.egressservice.datapath.NamespaceTopology.Seen;
import io.egressservice.testing.Privileges;
import java.nio.file.Path;
import java.time.Duration;
import java.util.stream.Stream;
import org.awaitility.core.ThrowingRunnable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the datapath test classes share: they run as root (or are skipped), each case has its own
 * topology ({@link #topo}, removed after the case), a temporary directory for the objects it applies, both
 * rule modes as a parameter source, the agent's CLI in-process, and the assertion that a probe, retried
 * until {@link #patience()}, was seen where and from what it should be.
 *
 * <p>JUnit runs a superclass's {@code @BeforeEach} methods before the subclass's, so a subclass's set-up
 * finds the namespaces' privileges checked (and, in {@link TopologyCase}, the topology built).
 */
abstract class NamespaceCase<T extends NamespaceTopology> {
  T topo;
  @TempDir Path tmp;
  /** The number of the last objects file a case wrote (each step writes its own, {@code tmp/step-N}). */
  int step;

  static Stream<String> ruleModes() {
    return Stream.of("source", "mark");
  }

  @BeforeEach
  void requireNetAdmin() {
    Privileges.assumeNetAdmin();
  }

  @AfterEach
  void removeTopology() {
    if (topo != null) {
      topo.close();
    }
  }

  /** How long a probe is retried before the case fails. */
  Duration patience() {
    return Duration.ofSeconds(5);
  }

  /** {@code assertion} holds within {@link #patience()}, tried at once and then every 50 ms. */
  void eventually(ThrowingRunnable assertion) {
    eventually(patience(), Duration.ofMillis(50), assertion);
  }

  void eventually(Duration atMost, Duration interval, ThrowingRunnable assertion) {
    await().atMost(atMost).pollDelay(Duration.ZERO).pollInterval(interval).untilAsserted(assertion);
  }

  /** The agent's CLI in-process; it must exit 0. */
  InProcess.Result agent(String... args) {
    return agent(0, args);
  }

  InProcess.Result agent(int expectedExit, String... args) {
    InProcess.Result r = InProcess.run(args);
    assertThat(r.exit()).as("%s exit; out:%n%s%nerr:%n%s", String.join(" ", args), r.out(), r.err())
        .isEqualTo(expectedExit);
    return r;
  }

  void expectUdp(String from, String dst, String where, String source) {
    expect("udp", from, dst, where, source);
  }

  void expectTcp(String from, String dst, String where, String source) {
    expect("tcp", from, dst, where, source);
  }

  /** Exactly one server saw the packet, in {@code where}, from {@code source}, and told the client so. */
  void expect(String protocol, String from, String dst, String where, String source) {
    eventually(() -> {
      Probe p = protocol.equals("udp") ? topo.udp(from, dst) : topo.tcp(from, dst, NamespaceTopology.PORT, 0);
      assertThat(p.seen()).as("%s %s -> %s: who saw it", protocol, from, dst)
          .containsExactly(new Seen(where, protocol, source));
      assertThat(p.reply()).as("%s %s -> %s: the answer", protocol, from, dst)
          .contains("saw " + source + " at " + where);
    });
  }
}
