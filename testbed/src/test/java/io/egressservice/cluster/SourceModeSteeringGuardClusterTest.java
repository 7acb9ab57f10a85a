package io.egressservice.cluster;

/** {@link SteeringGuardClusterTest} with the agents in rule mode {@code source}. */
class SourceModeSteeringGuardClusterTest extends SteeringGuardClusterTest {
  @Override
  String ruleMode() {
    return "source";
  }
}
