package io.egressservice.controller;

import static io.egressservice.controller.KubeObjects.egressService;
import static io.egressservice.controller.KubeObjects.lbService;
import static io.egressservice.controller.KubeObjects.slice;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.metrics.AgentMetrics;
import io.egressservice.model.PlanConfig;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceSpec.SourceIPBy;

/**
 * A GitOps tool's forced replace: many EgressServices deleted and re-created one after another as fast as the
 * API server takes them, against a real agent (real client, informers and kernel; fabric8's mock API server).
 * The kernel must keep the rules of every service the API holds, less the few absent at that moment.
 */
@EnableKubernetesMockClient(crud = true)
class MassRecreateClusterTest {
  static final String NODE = "node-a";
  static final int CHURNED = 400;
  static final int UNTOUCHED = 40;
  /** Concurrent delete-and-re-create loops: at most this many services are absent from the API at once. */
  static final int CHURNERS = 4;
  static final Duration WAIT = Duration.ofSeconds(60);

  KubernetesMockServer server;
  KubernetesClient client;
  @RegisterExtension
  final AgentKernel kernel = new AgentKernel("recreate", "10.128.0.0/16");
  NodeAgent agent;

  static String endpoint(int i) {
    return "10.128." + (i / 250) + "." + (i % 250 + 1);
  }

  static EgressService es(String name) {
    return egressService(name, SourceIPBy.LOADBALANCERIP, "100", NODE);
  }

  private void createServices(String prefix, int from, int count) throws Exception {
    List<HasMetadata> objects = new ArrayList<>();
    for (int i = from; i < from + count; i++) {
      String name = prefix + i;
      objects.add(lbService(name, "172.30." + (i / 250) + "." + (i % 250 + 1), "5.5." + (i / 250) + "." + (i % 250 + 1)));
      objects.add(slice(name, name + "-a", NODE, endpoint(i)));
      objects.add(es(name));
    }
    io.egressservice.testing.KubeWrites.createAll(client, objects, WAIT);
  }

  /** The sources of our endpoint rules now (the ClusterIP rules left out: one rule per service counted). */
  private Set<String> endpointRuleSources() {
    return kernel.rules().lines()
        .filter(l -> l.contains("proto 201") && l.contains("lookup 100") && l.contains("from 10.128."))
        .map(l -> l.split("\\s+")[2])
        .collect(Collectors.toSet());
  }

  @Test
  void aMassReCreateOfEgressServicesKeepsTheRulesOfThoseTheApiHolds() throws Exception {
    createServices("svc-", 0, CHURNED);
    createServices("steady-", CHURNED, UNTOUCHED);
    agent = kernel.start(
        new NodeAgent.Settings(NODE, PlanConfig.defaults(), Duration.ofMinutes(10), Duration.ofSeconds(2)),
        new AgentMetrics());
    int total = CHURNED + UNTOUCHED;
    await().atMost(WAIT).until(() -> endpointRuleSources().size() == total);

    AtomicBoolean churning = new AtomicBoolean(true);
    AtomicInteger recreated = new AtomicInteger();
    ExecutorService churn = Executors.newFixedThreadPool(CHURNERS);
    List<Future<?>> churners = new ArrayList<>();
    long start = System.nanoTime();
    for (int t = 0; t < CHURNERS; t++) {
      int first = t;
      churners.add(churn.submit(() -> {
        // two passes over this churner's share, each service deleted and created again at once
        for (int pass = 0; pass < 2; pass++) {
          for (int i = first; i < CHURNED; i += CHURNERS) {
            client.resources(EgressService.class).inNamespace(KubeObjects.NS).withName("svc-" + i).delete();
            client.resource(es("svc-" + i)).create();
            recreated.incrementAndGet();
          }
        }
        return null;
      }));
    }
    Set<String> steady = new java.util.HashSet<>();
    for (int i = CHURNED; i < total; i++) {
      steady.add(endpoint(i));
    }
    int fewest = total;
    int samples = 0;
    List<String> steadyLost = new ArrayList<>();
    try {
      // bounded: the churn ends on its own (2 x CHURNED re-creates); the deadline only guards a hung API
      long deadline = System.nanoTime() + WAIT.toNanos();
      while (churners.stream().anyMatch(f -> !f.isDone()) && System.nanoTime() < deadline) {
        Set<String> now = endpointRuleSources();
        samples++;
        fewest = Math.min(fewest, now.size());
        steady.stream().filter(s -> !now.contains(s)).findFirst().ifPresent(steadyLost::add);
      }
      for (Future<?> f : churners) {
        f.get(WAIT.toSeconds(), TimeUnit.SECONDS);
      }
    } finally {
      churning.set(false);
      churn.shutdownNow();
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    double rate = recreated.get() / seconds;
    System.out.printf("re-created %d EgressServices in %.1f s (%.0f/s); %d samples; fewest endpoint rules %d of %d%n",
        recreated.get(), seconds, rate, samples, fewest, total);

    assertThat(samples).as("the kernel was sampled during the churn").isGreaterThan(3);
    assertThat(steadyLost).as("services the churn did not touch keep their rules").isEmpty();
    // At most CHURNERS services are absent from the API at once; the rest of the allowance is the agent's own
    // latency from an API change to the kernel (a reconcile every 25 ms at least, each taking what came meanwhile):
    // a second's worth of re-creates, however fast they came, and never less than 20.
    int allowance = CHURNERS + Math.max(20, (int) Math.ceil(rate));
    assertThat(fewest).as("endpoint rules during the churn (%d services, %.0f re-creates/s)", total, rate)
        .isGreaterThanOrEqualTo(total - allowance);
    await().atMost(WAIT).until(() -> endpointRuleSources().size() == total);
  }
}
