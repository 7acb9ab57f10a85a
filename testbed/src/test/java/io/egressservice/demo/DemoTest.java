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
  void everyStepSeesTheExpectedSourceAndUplinkSaysWhatDiffersFromTheStepBeforeAndAllNamespacesAreRemoved() {
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
        .doesNotContain("EXPECTED");
    assertThat(text.toString().lines().filter(l -> l.startsWith("   what differs from step ")).map(l -> l.substring(3, 28))
        .toList()).as("every step after the first says what differs from the one before")
        .containsExactly("what differs from step 1:", "what differs from step 2:", "what differs from step 3:",
            "what differs from step 4:");
    assertThat(stepText(text.toString(), "2.")).as("step 2 prints the rules it added, marked")
        .contains("     + 5000:\tfrom 10.128.1.5 lookup 100 proto 201")
        .contains("EgressService checkout created (LoadBalancerIP, network 100)");
    assertThat(stepText(text.toString(), "3."))
        .as("step 3 does not reprint step 2's rules: it says only the sending pod differs")
        .contains("what differs from step 2: nothing applied to the API; our ip rules are the same on every node;"
            + " the packet comes from pod-b1 on node-b (pod-a1 on node-a before)")
        .contains("ip rule on node-a (ours): unchanged since step 2 (3 rule(s))")
        .contains("ip rule on node-b (ours): unchanged since step 2 (1 rule(s))")
        .doesNotContain("lookup");
    assertThat(text.toString().lines().filter(l -> l.matches("\\d+\\. .*")).map(l -> l.substring(0, 2)).toList())
        .as("the steps are numbered in order").containsExactly("1.", "2.", "3.", "4.", "5.");
    assertThat((System.nanoTime() - start) / 1e9).as("seconds").isLessThan(60);
    java.util.regex.Matcher prefix = java.util.regex.Pattern.compile("namespaces \\((esa-tb[0-9a-f]+-)\\*\\) removed")
        .matcher(text.toString());
    assertThat(prefix.find()).as("the demo names what it removed:%n%s", text).isTrue();
    // other clusters (other tests, other sessions) may exist meanwhile: only the demo's own must be gone
    assertThat(Netns.run(List.of("ip", "netns", "list"))).doesNotContain(prefix.group(1));
  }

  /** The lines of step {@code number} ("3."), from its title to the next blank line. */
  static String stepText(String text, String number) {
    List<String> lines = text.lines().toList();
    int from = 0;
    while (from < lines.size() && !lines.get(from).startsWith(number + " ")) {
      from++;
    }
    int to = from;
    while (to < lines.size() && !lines.get(to).isBlank()) {
      to++;
    }
    return String.join("\n", lines.subList(from, to));
  }
}
