package io.egressservice.cluster;

/** {@link SteeringClusterTest} with the agents in rule mode {@code source}. */
class SourceRuleModeClusterTest extends SteeringClusterTest {
  @Override
  String ruleMode() {
    return "source";
  }
}
