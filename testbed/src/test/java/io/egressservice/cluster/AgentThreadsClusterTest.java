package io.egressservice.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.testbed.AgentProcess;
import io.egressservice.testbed.Cluster;
import io.egressservice.testing.Privileges;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.ovn.k8s.v1.EgressServiceSpec.SourceIPBy;

/**
 * The real agent process (the DaemonSet's JVM options, on this 2-CPU machine the common ForkJoinPool's parallelism
 * would be one) writing many Events and statuses at a start: its threads stay a fixed set, they are not started
 * per HTTP request.
 */
class AgentThreadsClusterTest {
  static final int SERVICES = 150;

  @Test
  void writingEventsAndStatusesForManyServicesStartsNoThreadPerRequest() {
    Privileges.assumeNetAdmin();
    try (Cluster c = Cluster.builder().node("node-a", 1, 1).start()) {
      AgentProcess agent = c.node("node-a").agent();
      Cluster.Pod pod = c.node("node-a").pods().get(0);
      double startedAtReady = agent.metric("jvm_threads_started_total");
      for (int i = 0; i < SERVICES; i++) {
        String name = "svc-" + i;
        c.api().createLoadBalancer(name, "10.96.1." + (i + 1), "fd00:96::1:" + Integer.toHexString(i + 1),
            List.of("172.18.1." + (i + 1)), List.of(pod));
        c.api().applyEgressService(name, SourceIPBy.LOADBALANCERIP, "", Optional.empty());
      }
      // Every service hosted (a status written by the allocator) and an Event written for each (the burst of 100,
      // then 10 a second): a few hundred HTTP requests.
      await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofSeconds(1))
          .until(() -> agent.metric("egress_service_agent_events_written_total") >= SERVICES);
      double started = agent.metric("jvm_threads_started_total") - startedAtReady;
      assertThat(started).as("threads the agent started while writing %d Events and statuses", SERVICES)
          .isLessThan(30);
      assertThat(agent.metric("jvm_threads_peak_threads")).as("peak live threads").isLessThan(80);
    }
  }
}
