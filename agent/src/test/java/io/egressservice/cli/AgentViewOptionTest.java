package io.egressservice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** Where {@code status} and {@code explain} look for the running agent when not told: the DaemonSet's address and port. */
class AgentViewOptionTest {
  @Test
  void theAgentsMetricsAreFoundWhereTheDaemonSetTellsTheAgentToListen() {
    assertThat(AgentViewOption.fromEnvironment("10.0.0.12", "9500")).hasToString("http://10.0.0.12:9500/metrics");
    assertThat(AgentViewOption.fromEnvironment("fd00::12", "9464")).hasToString("http://[fd00::12]:9464/metrics");
    assertThat(AgentViewOption.fromEnvironment("", null)).hasToString("http://127.0.0.1:9464/metrics");
  }
}
