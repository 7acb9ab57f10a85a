package io.egressservice.cluster;

/** {@link SteeringGuardClusterTest} with the agents in rule mode {@code mark}. */
class MarkModeSteeringGuardClusterTest extends SteeringGuardClusterTest {
  @Override
  String ruleMode() {
    return "mark";
  }
}
