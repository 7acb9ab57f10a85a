package io.egressservice.demo;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.testing.Netns;
import io.egressservice.testing.Privileges;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The embedded demo runs its walk-through with real packets, sees what it should, and leaves nothing behind. */
class DemoTest {
  @Test
  void everyStepSeesTheExpectedSourceAndUplinkAndAllNamespacesAreRemoved() {
    Privileges.assumeNetAdmin();
    StringWriter text = new StringWriter();
    long start = System.nanoTime();
    boolean ok;
    try (Demo demo = new Demo(new PrintWriter(text))) {
      ok = demo.run();
    }

    assertThat(ok).as(text.toString()).isTrue();
    assertThat(text.toString())
        .contains("pod-a1 10.128.1.5 (on node-a) -> 203.0.113.10:7000 over UDP: uplink-1 of node-a saw 172.16.11.1   [as expected]")
        .contains("pod-a1 10.128.1.5 (on node-a) -> 203.0.113.10:7000 over UDP: uplink-2 of node-a saw 5.5.5.5   [as expected]")
        .contains("pod-b1 10.128.2.5 (on node-b) -> 203.0.113.10:7000 over UDP: uplink-2 of node-a saw 5.5.5.5   [as expected]")
        .as("Network mode: the node's address on the service's network (the CNI's masquerade), not the pod's")
        .contains("pod-a1 10.128.1.5 (on node-a) -> 203.0.113.10:7000 over UDP: uplink-2 of node-a saw 172.16.12.1   [as expected]")
        .contains("pod-b1 10.128.2.5 (on node-b) -> 203.0.113.10:7000 over UDP: uplink-1 of node-b saw 172.16.21.1   [as expected]")
        .contains("5000:\tfrom 10.128.1.5 lookup 100 proto 201")
        .doesNotContain("EXPECTED");
    assertThat(text.toString().lines().filter(l -> l.matches("\\d+\\. .*")).map(l -> l.substring(0, 2)).toList())
        .as("the steps are numbered in order").containsExactly("1.", "2.", "3.", "4.", "5.");
    assertThat((System.nanoTime() - start) / 1e9).as("seconds").isLessThan(60);
    java.util.regex.Matcher prefix = java.util.regex.Pattern.compile("namespaces \\((esa-tb[0-9a-f]+-)\\*\\) removed")
        .matcher(text.toString());
    assertThat(prefix.find()).as("the demo names what it removed:%n%s", text).isTrue();
    // other clusters (other tests, other sessions) may exist meanwhile: only the demo's own must be gone
    assertThat(Netns.run(List.of("ip", "netns", "list"))).doesNotContain(prefix.group(1));
  }
}
