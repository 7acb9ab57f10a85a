package io.egressservice.allocator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import io.egressservice.controller.AgentSerialization;
import io.fabric8.kubernetes.api.model.coordination.v1.LeaseBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.http.BasicBuilder;
import io.fabric8.kubernetes.client.http.HttpRequest;
import io.fabric8.kubernetes.client.http.Interceptor;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import java.time.Duration;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A follower takes over a Lease that expired: it starts a fresh elector and cancels the old one, whose loop may be
 * reading the Lease at that very moment (holding its elector's lock, about to tell the runner what it read). Here the
 * old elector's read is held until the takeover is under way, then let go: the replica must neither deadlock nor stop
 * electing, and must still close.
 */
@EnableKubernetesMockClient(crud = true)
class AllocatorRunnerTakeoverMockServerTest {
  private static final String NS = "egress-service-agent";
  private static final String IDENTITY = "follower";

  KubernetesMockServer server;
  KubernetesClient client;

  private final CountDownLatch readMayGoOn = new CountDownLatch(1);
  private final AtomicInteger leaseReads = new AtomicInteger();
  private KubernetesClient gatedClient;
  private AllocatorRunner runner;

  /**
   * The runner's client: the elector's loop (on the client's executor) reads the Lease once freely (the runner learns
   * when it expires), and its later reads wait for {@link #readMayGoOn}. An elector started by a takeover makes its
   * first attempt on the runner's election thread, which passes.
   */
  private KubernetesClient gated() {
    Interceptor gate = new Interceptor() {
      @Override
      public void before(BasicBuilder builder, HttpRequest request, RequestTags tags) {
        if (request.method().equals("GET") && request.uri().getPath().endsWith("/leases/egress-service-allocator")
            && Thread.currentThread().getName().matches("-?\\d+-pool-\\d+-thread-\\d+")) {
          int read = leaseReads.incrementAndGet();
          if (read == 1) {
            renewedByTheGoneLeaderJustNow(); // however long the runner took to start
            return;
          }
          try {
            readMayGoOn.await(20, TimeUnit.SECONDS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
      }
    };
    return AgentSerialization.clientBuilder().withConfig(client.getConfiguration())
        .withHttpClientBuilderConsumer(b -> b.addOrReplaceInterceptor("lease-read-gate", gate)).build();
  }

  @AfterEach
  void stop() {
    readMayGoOn.countDown();
    if (runner != null) {
      assertTimeoutPreemptively(Duration.ofSeconds(10), runner::close, "the runner closes");
    }
    if (gatedClient != null) {
      gatedClient.close();
    }
  }

  @Test
  void takingOverAnExpiredLeaseWhileTheOldElectorReadsItNeitherDeadlocksNorStopsElecting() {
    createLeaseHeldByAGoneLeader();
    gatedClient = gated();

    runner = AllocatorRunner.start(gatedClient, NS, IDENTITY, CONFIG);
    // the old elector's next attempt reads the Lease and waits at the gate, holding its elector's lock
    await().atMost(Duration.ofSeconds(5)).until(() -> leaseReads.get() >= 2);
    // 3 s after the renewal the Lease expires: the runner takes it over, and cancelling the old elector waits for
    // that elector's lock
    await().atMost(Duration.ofSeconds(10)).until(AllocatorRunnerTakeoverMockServerTest::takeoverThreadBlocked);
    readMayGoOn.countDown();

    await().atMost(Duration.ofSeconds(15)).until(runner::isLeader);
    assertThat(client.leases().inNamespace(NS).withName("egress-service-allocator").get().getSpec().getHolderIdentity())
        .isEqualTo(IDENTITY);
  }

  /**
   * Whoever holds the runner (a takeover cancelling the old elector, {@code close}) must not stall the elector's
   * loop, which holds its own lock while it reports what it read: the two waiting for each other deadlocked a
   * replica in the chaos soak (it never elected again and could not stop).
   */
  @Test
  void theElectorKeepsReadingTheLeaseWhileTheRunnerIsHeld() {
    createLeaseHeldByAGoneLeader();
    readMayGoOn.countDown(); // no gate here
    gatedClient = gated();
    runner = AllocatorRunner.start(gatedClient, NS, IDENTITY, CONFIG.withLease(Duration.ofSeconds(60),
        Duration.ofSeconds(50), Duration.ofMillis(200)));
    await().atMost(Duration.ofSeconds(5)).until(() -> leaseReads.get() >= 1);

    synchronized (runner) {
      int before = leaseReads.get();
      await().atMost(Duration.ofSeconds(5)).until(() -> leaseReads.get() >= before + 3);
    }
  }

  private static final AllocatorConfig CONFIG = AllocatorConfig.defaults().withLease(Duration.ofSeconds(2),
      Duration.ofMillis(1500), Duration.ofMillis(300));

  /** The Lease of a leader that is gone. */
  private void createLeaseHeldByAGoneLeader() {
    ZonedDateTime now = ZonedDateTime.now(ZoneOffset.UTC);
    client.resource(new LeaseBuilder().withNewMetadata().withName("egress-service-allocator").withNamespace(NS)
        .endMetadata().withNewSpec().withHolderIdentity("gone-leader").withLeaseDurationSeconds(3)
        .withAcquireTime(now).withRenewTime(now).endSpec().build()).create();
  }

  /** Its last renewal, as the runner's first read sees it: now, for 3 s (directly, not through the gate). */
  private void renewedByTheGoneLeaderJustNow() {
    client.leases().inNamespace(NS).withName("egress-service-allocator").edit(l -> {
      l.getSpec().setRenewTime(ZonedDateTime.now(ZoneOffset.UTC));
      return l;
    });
  }

  /** The runner's election thread waits for a lock (the old elector's, while cancelling it). */
  private static boolean takeoverThreadBlocked() {
    return Thread.getAllStackTraces().keySet().stream()
        .anyMatch(t -> t.getName().equals("egress-allocator-election-" + IDENTITY) && t.getState() == Thread.State.BLOCKED);
  }
}
