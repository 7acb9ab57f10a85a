package io.egressservice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;

/** The demo command reaches the demo by its class name (cli does not import the testbed above it). */
class DemoWalkthroughTest {
  @Test
  void demoCommandFindsTheDemoByItsClassNameAndClosesItTwiceSafely() {
    StringWriter text = new StringWriter();
    DemoWalkthrough demo = DemoWalkthrough.load(new PrintWriter(text));

    assertThat(demo.demoClass().getName()).isEqualTo(DemoWalkthrough.DEMO_CLASS);
    demo.close(); // nothing started: closes without a cluster
    demo.close(); // idempotent, as the Ctrl-C hook and the command's finally both call it
    assertThat(text.toString()).isEmpty();
  }
}
