package io.egressservice.probe;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.fasterxml.jackson.databind.JsonNode;
import io.egressservice.kernel.linux.NftClient;
import io.egressservice.kernel.NftException;
import io.egressservice.model.PlanConfig;
import io.egressservice.testing.Netns;
import io.egressservice.testing.NetnsFixture;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.LoggerFactory;

/**
 * The in-node probe (the DaemonSet's case: NET_ADMIN without SYS_ADMIN) on this machine's kernel, in a test
 * namespace standing in for the node's: it finds every feature and leaves the namespace's ruleset, rules, routes,
 * links and device settings exactly as they were, a killed earlier probe's leftovers included.
 */
class NodeNamespaceCheckKernelTest {
  @RegisterExtension
  final NetnsFixture fixture = new NetnsFixture("probe");

  /** Something of the agent's and of others' in the "node", which the probe must not touch. */
  private void aBusyNode(Netns ns) {
    // No IPv6 link-local addresses and routes: they would appear after the "before" picture, probe or not.
    ns.exec("sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1");
    ns.exec("ip", "link", "add", "egress-vx", "type", "vxlan", "external", "gpe", "dstport", "4799", "nolearning");
    ns.exec("ip", "link", "set", "egress-vx", "up");
    ns.exec("ip", "link", "add", "eth0", "type", "veth", "peer", "name", "eth0-peer");
    ns.exec("ip", "link", "set", "eth0-peer", "up");
    ns.exec("ip", "addr", "add", "10.1.0.2/24", "dev", "eth0");
    ns.exec("ip", "link", "set", "eth0", "up");
    ns.exec("ip", "route", "add", "default", "via", "10.1.0.1");
    ns.exec("ip", "rule", "add", "priority", "5000", "fwmark", "0x01000000/0x3f000000", "lookup", "7000",
        "protocol", "201");
    ns.exec("ip", "route", "add", "throw", "10.0.0.0/8", "table", "7000", "proto", "201");
    ns.execWithInput("""
        table inet egress_service {
          set in_cluster_v4 { type ipv4_addr; flags interval; elements = { 10.0.0.0/8 } }
          chain postrouting { type nat hook postrouting priority srcnat - 10; policy accept; ip daddr @in_cluster_v4 return; }
        }
        """, "nft", "-f", "-");
    // The kernel sets a device's operational state a moment after it goes up (linkwatch): wait for it, so that the
    // "before" picture is the settled one.
    await().atMost(Duration.ofSeconds(10)).until(() -> {
      for (JsonNode link : ns.json("ip", "-j", "link")) {
        if (link.path("ifname").asText().startsWith("eth0") && !link.path("operstate").asText().equals("UP")) {
          return false;
        }
      }
      return true;
    });
  }

  private static Map<String, JsonNode> state(Netns ns) {
    Map<String, JsonNode> s = new LinkedHashMap<>();
    s.put("nft -j list ruleset", ns.json("nft", "-j", "list", "ruleset"));
    s.put("ip -j rule", ns.json("ip", "-j", "rule"));
    s.put("ip -j -6 rule", ns.json("ip", "-j", "-6", "rule"));
    s.put("ip -j route show table all", ns.json("ip", "-j", "route", "show", "table", "all"));
    s.put("ip -j -6 route show table all", ns.json("ip", "-j", "-6", "route", "show", "table", "all"));
    s.put("ip -j -d link", ns.json("ip", "-j", "-d", "link"));
    s.put("sysctl lo", ns.json("sh", "-c", "printf '[%s,%s]' $(cat /proc/sys/net/ipv4/conf/lo/src_valid_mark"
        + " /proc/sys/net/ipv4/conf/lo/rp_filter)"));
    return s;
  }

  private KernelFeatures probeInTheNamespace() {
    try (NodeNamespaceCheck check = NodeNamespaceCheck.open(Optional.of(fixture.ns().name()))) {
      return KernelProbe.probe(check);
    }
  }

  @Test
  void findsEveryFeatureAndLeavesTheNamespaceAsItWas() {
    aBusyNode(fixture.ns());
    Map<String, JsonNode> before = state(fixture.ns());

    KernelFeatures found = probeInTheNamespace();
    System.out.printf("in-node kernel probe on Linux %s: %d ms for %d features%n", found.kernelRelease(),
        found.took().toMillis(), Feature.values().length);

    assertThat(found.missing()).as("missing on Linux %s", found.kernelRelease()).isEmpty();
    assertThat(state(fixture.ns())).isEqualTo(before);
  }

  @Test
  void removesWhatAKilledProbeLeftAndNothingElse() {
    Netns ns = fixture.ns();
    aBusyNode(ns);
    // A lookalike of the probe's rule that is not the probe's (another source): it stays.
    ns.exec("ip", "rule", "add", "priority", "40000", "from", "192.0.2.1", "lookup", "2000000201", "protocol", "209");
    Map<String, JsonNode> before = state(ns);
    // What a probe killed half-way leaves, every kind of it.
    ns.exec("ip", "link", "add", NodeNamespaceCheck.DEVICE, "type", "vxlan", "external", "gpe", "dstport", "47990");
    ns.exec("ip", "rule", "add", "priority", "40000", "from", "192.0.2.254", "fwmark", "0x01000000/0x3f000000",
        "lookup", "2000000201", "protocol", "209");
    ns.exec("ip", "route", "add", "throw", "192.0.2.255/32", "table", "2000000202", "proto", "209");
    ns.exec("ip", "route", "add", "192.0.2.253/32", "encap", "ip", "id", "1", "dst", "192.0.2.1", "dev", "lo",
        "table", "2000000202", "proto", "209");
    ns.execWithInput("""
        table inet esa_probe_readback {
          counter s0 { comment "ns/name"; }
        }
        table inet esa_probe_nat {
        }
        """, "nft", "-f", "-");
    assertThat(state(ns)).isNotEqualTo(before);

    KernelFeatures found = probeInTheNamespace();

    assertThat(found.missing()).isEmpty();
    assertThat(state(ns)).isEqualTo(before);
  }

  /**
   * Two agents starting on one node at once (a DaemonSet's maxSurge, or {@code apply} by hand while the agent
   * starts): each probe runs whole, one after the other, neither removing the other's live objects nor failing on
   * them, and the node is as before.
   */
  @Test
  void twoProbesAtOnceInOneNamespaceBothFindEveryFeatureAndLeaveItAsItWas() throws Exception {
    aBusyNode(fixture.ns());
    Map<String, JsonNode> before = state(fixture.ns());
    CyclicBarrier start = new CyclicBarrier(2);
    ExecutorService probes = Executors.newFixedThreadPool(2);
    try {
      List<Future<KernelFeatures>> both = probes.invokeAll(List.of(() -> {
        start.await();
        return probeInTheNamespace();
      }, () -> {
        start.await();
        return probeInTheNamespace();
      }));

      for (Future<KernelFeatures> one : both) {
        assertThat(one.get().missing()).isEmpty();
      }
    } finally {
      probes.shutdownNow();
    }
    assertThat(state(fixture.ns())).isEqualTo(before);
  }

  /** A child JVM in the test's namespace holding the probe lock, once it says it holds it. */
  private Process aLockHolder() throws IOException {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Process holder = new ProcessBuilder("ip", "netns", "exec", fixture.ns().name(), java, "-cp",
        System.getProperty("java.class.path"), "io.egressservice.probe.ProbeLockHolderMain")
        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
    fixture.closeLater(() -> {
      holder.destroyForcibly();
      holder.waitFor();
    });
    String said = new BufferedReader(new InputStreamReader(holder.getInputStream(), StandardCharsets.UTF_8))
        .readLine();
    assertThat(said).as("the holder's first line").isEqualTo("held");
    return holder;
  }

  /**
   * Any process in the node's namespace can hold the lock (abstract socket names have no permissions); one that
   * never lets go delays the probe by the wait and no more, the agent then starts unprobed with a WARN naming the
   * lock, and nothing is touched without the lock: not even what looks like a killed probe's leftover.
   */
  @Test
  void aLockHolderThatNeverLetsGoDelaysTheStartOnlyUpToTheWaitAndTouchesNothing() throws Exception {
    Netns ns = fixture.ns();
    aBusyNode(ns);
    ns.exec("ip", "rule", "add", "priority", "40000", "from", "192.0.2.254", "fwmark", "0x01000000/0x3f000000",
        "lookup", "2000000201", "protocol", "209");
    Map<String, JsonNode> before = state(ns);
    aLockHolder();
    ListAppender<ILoggingEvent> log = new ListAppender<>();
    log.start();
    Logger probeLog = (Logger) LoggerFactory.getLogger(KernelProbe.class);
    probeLog.addAppender(log);
    PlanConfig config = PlanConfig.defaults();
    Duration wait = Duration.ofSeconds(2);

    long start = System.nanoTime();
    PlanConfig admitted;
    try {
      admitted = KernelProbe.atStartup(config, () -> {
        throw new ScratchNamespace.Unavailable("no scratch namespace in this test", true, null);
      }, () -> NodeNamespaceCheck.open(Optional.of(ns.name()), wait));
    } finally {
      probeLog.detachAppender(log);
    }
    Duration took = Duration.ofNanos(System.nanoTime() - start);
    System.out.printf("startup probe with the lock held elsewhere: %d ms (wait %d ms)%n", took.toMillis(),
        wait.toMillis());

    assertThat(took).isBetween(wait, wait.plusSeconds(2));
    assertThat(admitted).isEqualTo(config);
    assertThat(log.list).filteredOn(e -> e.getLevel() == Level.WARN).singleElement()
        .extracting(ILoggingEvent::getFormattedMessage).asString()
        .contains("kernel features not probed", "@" + ProbeLock.NAME, "for all of 2000 ms");
    assertThat(state(ns)).isEqualTo(before);
  }

  /** The kernel drops an abstract socket's name with its last descriptor: a probe killed -9 leaves no stale lock. */
  @Test
  void aProbeKilledWithSigkillFreesTheLockAtOnce() throws Exception {
    Process holder = aLockHolder();
    assertThat(ProbeLock.tryTake(fixture.thread())).as("while the holder lives").isEmpty();

    Netns.run(List.of("kill", "-KILL", Long.toString(holder.pid())));
    assertThat(holder.waitFor(10, TimeUnit.SECONDS)).isTrue();

    Optional<ProbeLock> taken = ProbeLock.tryTake(fixture.thread());
    assertThat(taken).as("one try, right after the holder's death").isPresent();
    taken.get().close();
  }

  @Test
  void checkModeHasTheKernelValidateAndCommitNothing() {
    NftClient nft = fixture.closeLater(NftClient.open(fixture.thread()));
    String all = NodeNamespaceCheck.dormant(String.join("", ScratchNamespace.SCRIPTS.values()));
    assertThat(all).contains("flags dormant;");

    nft.checkScript(all);
    assertThat(fixture.ns().exec("nft", "list", "ruleset")).isEmpty();

    // Refused by the kernel, not by nft's parser: a nat chain on the forward hook (EOPNOTSUPP), and more elements
    // than the set's size (ENFILE); check mode reports both, as a commit would.
    assertThatThrownBy(() -> nft.checkScript("""
        table inet esa_probe_refused {
          flags dormant;
          chain c { type nat hook forward priority 0; }
        }
        """)).isInstanceOf(NftException.class).hasMessageContaining("Operation not supported");
    assertThatThrownBy(() -> nft.checkScript("""
        table inet esa_probe_refused {
          set s { type ipv4_addr; size 1; elements = { 192.0.2.1, 192.0.2.2 } }
        }
        """)).isInstanceOf(NftException.class).hasMessageContaining("Too many open files");
    assertThat(fixture.ns().exec("nft", "list", "ruleset")).isEmpty();
  }

  /**
   * The DaemonSet's privileges for real: a JVM whose capabilities are CAP_NET_ADMIN alone (bounding set, so root's
   * exec keeps only that one, as the DaemonSet's {@code drop: [ALL], add: [NET_ADMIN]}), in the test namespace,
   * cannot make a scratch namespace, so the agent's startup probe takes the in-node path and finds every feature,
   * leaving the namespace as it was.
   */
  @Test
  void withOnlyNetAdminTheStartupProbeRunsInTheNodesNamespace() {
    Netns ns = fixture.ns();
    aBusyNode(ns);
    Map<String, JsonNode> before = state(ns);
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Netns.Result r = ns.tryExec("setpriv", "--bounding-set", "-all,+net_admin", "--", java, "-cp",
        System.getProperty("java.class.path"), "io.egressservice.probe.StartupProbeMain");
    System.out.println(r.stdout());

    assertThat(r.exitCode()).as(r.stderr()).isZero();
    assertThat(r.stdout()).contains("capabilities=0000000000001000 (net_admin only)", "scratch=unavailable permission=true",
        "path=node", "missing={}", "admitted=unchanged");
    assertThat(state(ns)).isEqualTo(before);
  }
}
