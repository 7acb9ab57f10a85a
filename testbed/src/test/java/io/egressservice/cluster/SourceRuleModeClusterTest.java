package io.egressservice.cluster;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.ClassOrderer;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.TestClassOrder;
import org.junit.jupiter.api.TestInstance;

/**
 * {@link SteeringClusterTest} and {@link SteeringGuardClusterTest} with the agents in rule mode {@code source}, on one
 * cluster: the steering cases first (each deletes its service and waits for the pristine kernel state), then the
 * guard's (web on node-a until the cluster closes).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestClassOrder(ClassOrderer.OrderAnnotation.class)
class SourceRuleModeClusterTest {
  SteeringCluster shared;

  @BeforeAll
  void startCluster() {
    shared = SteeringCluster.start("source");
  }

  @AfterAll
  void stopCluster() {
    if (shared != null) {
      shared.close();
    }
  }

  @Nested
  @Order(1)
  class Steering extends SteeringClusterTest {
    @Override
    SteeringCluster shared() {
      return shared;
    }
  }

  @Nested
  @Order(2)
  class Guard extends SteeringGuardClusterTest {
    @Override
    SteeringCluster shared() {
      return shared;
    }
  }
}
