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
        .contains("uplink-1 saw 10.128.0.5   [as expected]")
        .contains("uplink-2 saw 5.5.5.5   [as expected]")
        .contains("uplink-2 saw 10.128.0.5   [as expected]")
        .contains("5000:\tfrom 10.128.0.5 lookup 100 proto 201")
        .doesNotContain("EXPECTED");
    assertThat((System.nanoTime() - start) / 1e9).isLessThan(60);
    assertThat(Netns.run(List.of("ip", "netns", "list"))).doesNotContain("esa-demo-");
  }
}
