package io.egressservice.cluster;

/** {@link SteeringClusterTest} with the agents in rule mode {@code mark}. */
class MarkRuleModeClusterTest extends SteeringClusterTest {
  @Override
  String ruleMode() {
    return "mark";
  }
}
