package io.egressservice.allocator;

import io.egressservice.informers.ClusterInformers;
import io.egressservice.metrics.AllocatorMetrics;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.extended.leaderelection.LeaderCallbacks;
import io.fabric8.kubernetes.client.extended.leaderelection.LeaderElectionConfigBuilder;
import io.fabric8.kubernetes.client.extended.leaderelection.resourcelock.LeaseLock;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs an {@link Allocator} under leader election on the Lease {@code <leaseNamespace>/<leaseName>}: informers run
 * at once, allocation only while this identity holds the Lease. fabric8's {@code LeaderElector} ends after losing
 * the lease, so a new one is started (after a retry period) until {@link #close()}.
 *
 * <p>A follower does not wait for its elector's next jittered attempt (up to 2.2 retry periods) once the Lease has
 * expired: from each record the elector reads it knows when the holder's lease runs out, and if no later renewal
 * has been seen by then it starts a fresh elector, whose first attempt is immediate. A leader that dies with the
 * host it watched is so replaced about one lease duration after its last renewal.
 *
 * <pre>{@code
 * try (AllocatorRunner runner = AllocatorRunner.start(client, "egress-service-system", podName)) { ... }
 * }</pre>
 */
public final class AllocatorRunner implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(AllocatorRunner.class);
  /** A watch down this long makes the view stale: the node agent's /readyz bound. */
  static final java.time.Duration STALE_VIEW_BOUND = java.time.Duration.ofSeconds(30);

  private final KubernetesClient client;
  private final String leaseNamespace;
  private final String identity;
  private final AllocatorConfig config;
  private final Allocator allocator;
  private final ScheduledExecutorService restarts;
  private volatile String observedLeader;
  /**
   * The newest renewal seen of another holder's Lease (wall clock, as the Lease records it); guarded by
   * {@link #renewalLock}, not by this runner: the elector's loop reports it while holding its own lock, and must never
   * wait for a thread that holds this runner's lock while it waits for the elector's (cancelling it, say).
   */
  private java.time.ZonedDateTime observedRenewal;
  private final Object renewalLock = new Object();
  private CompletableFuture<?> election;
  private volatile io.egressservice.informers.StaleViewEvents staleView;
  private volatile boolean closed;

  private AllocatorRunner(KubernetesClient client, Allocator allocator, String leaseNamespace, String identity,
      AllocatorConfig config) {
    this.client = Objects.requireNonNull(client);
    this.leaseNamespace = Objects.requireNonNull(leaseNamespace);
    this.identity = Objects.requireNonNull(identity);
    this.config = Objects.requireNonNull(config);
    this.allocator = allocator;
    this.restarts = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "egress-allocator-election-" + identity);
      t.setDaemon(true);
      return t;
    });
  }

  /** Starts with {@link AllocatorConfig#defaults()}. */
  public static AllocatorRunner start(KubernetesClient client, String leaseNamespace, String identity) {
    return start(client, leaseNamespace, identity, AllocatorConfig.defaults());
  }

  public static AllocatorRunner start(
      KubernetesClient client, String leaseNamespace, String identity, AllocatorConfig config) {
    return start(client, leaseNamespace, identity, config, new AllocatorMetrics());
  }

  /** With informers of its own, counting into {@code metrics} (the {@code allocator} command). */
  public static AllocatorRunner start(KubernetesClient client, String leaseNamespace, String identity,
      AllocatorConfig config, AllocatorMetrics metrics) {
    return start(client, new Allocator(client, config, identity, metrics), leaseNamespace, identity, config);
  }

  /**
   * On informers the process shares with the node agent (created with {@link AllocatorConfig#resyncPeriod()});
   * the caller closes them after this runner.
   */
  public static AllocatorRunner start(
      KubernetesClient client, ClusterInformers informers, String leaseNamespace, String identity) {
    return start(client, informers, leaseNamespace, identity, AllocatorConfig.defaults(), new AllocatorMetrics());
  }

  /** As above with {@code config} (its resync period must be the informers'), counting into {@code metrics}. */
  public static AllocatorRunner start(KubernetesClient client, ClusterInformers informers, String leaseNamespace,
      String identity, AllocatorConfig config, AllocatorMetrics metrics) {
    return start(client, new Allocator(client, informers, config, identity, metrics), leaseNamespace, identity,
        config);
  }

  private static AllocatorRunner start(
      KubernetesClient client, Allocator allocator, String leaseNamespace, String identity, AllocatorConfig config) {
    AllocatorRunner runner = new AllocatorRunner(client, allocator, leaseNamespace, identity, config);
    allocator.addListener(new SelfSuspicionEvents(client, leaseNamespace, config.leaseName(), identity,
        allocator::isLeading, runner.restarts, SelfSuspicionEvents.DEFAULT_SPACING));
    // The leader's view going stale, and catching up, told on the Lease at the node agent's readiness bound.
    runner.staleView = new io.egressservice.informers.StaleViewEvents(client,
        () -> allocator.watchesDownFor(STALE_VIEW_BOUND),
        io.egressservice.informers.StaleViewEvents.Target.lease(leaseNamespace, config.leaseName(), Allocator.COMPONENT,
            identity, () -> java.util.Optional.ofNullable(
                client.leases().inNamespace(leaseNamespace).withName(config.leaseName()).get())
                .map(l -> l.getMetadata().getUid())),
        allocator::isLeading, io.egressservice.informers.StaleViewEvents.DEFAULT_SPACING,
        java.time.Clock.systemUTC()).start();
    runner.allocator.start();
    runner.elect();
    return runner;
  }

  private synchronized void elect() {
    if (closed) {
      return;
    }
    var electionConfig = new LeaderElectionConfigBuilder()
        .withName(config.leaseName())
        .withLock(new ObservedLease(new LeaseLock(leaseNamespace, config.leaseName(), identity), this::observed))
        .withLeaseDuration(config.leaseDuration())
        .withRenewDeadline(config.renewDeadline())
        .withRetryPeriod(config.retryPeriod())
        .withReleaseOnCancel(true)
        .withLeaderCallbacks(new LeaderCallbacks(
            allocator::startLeading,
            allocator::stopLeading,
            leader -> {
              observedLeader = leader;
              LOG.info("{}: allocator leader is now {}", identity, leader);
            }))
        .build();
    CompletableFuture<?> f = client.leaderElector().withConfig(electionConfig).build().start();
    election = f;
    f.whenComplete((v, t) -> {
      synchronized (this) {
        if (election != f) {
          return; // superseded by electNow: that elector decides the term now
        }
      }
      allocator.stopLeading();
      synchronized (this) {
        if (!closed && election == f) {
          if (t != null) {
            LOG.warn("{}: leader election ended: {}", identity, t.toString());
          }
          restarts.schedule(this::elect, config.retryPeriod().toMillis(), TimeUnit.MILLISECONDS);
        }
      }
    });
  }

  /** Every record the elector reads: when another holder's lease will run out, try at that moment. */
  private void observed(io.fabric8.kubernetes.client.extended.leaderelection.resourcelock.LeaderElectionRecord r) {
    String holder = r.getHolderIdentity();
    if (holder == null || holder.isEmpty() || holder.equals(identity) || r.getRenewTime() == null
        || r.getLeaseDuration() == null) {
      return;
    }
    java.time.ZonedDateTime renewed = r.getRenewTime();
    synchronized (renewalLock) {
      if (closed || observedRenewal != null && !renewed.isAfter(observedRenewal)) {
        return;
      }
      observedRenewal = renewed;
    }
    long wait = java.time.Duration.between(java.time.ZonedDateTime.now(), renewed.plus(r.getLeaseDuration()))
        .toMillis() + EXPIRY_MARGIN_MS;
    try {
      restarts.schedule(() -> electNow(renewed), Math.max(0, wait), TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      // closed
    }
  }

  /** After the Lease's expiry: clocks differ by milliseconds, fabric8 compares with isAfter. */
  private static final long EXPIRY_MARGIN_MS = 50;

  /**
   * A fresh elector now, if no renewal after {@code renewed} was seen and this replica does not lead.
   *
   * <p>The old elector is cancelled without this runner's lock: cancelling runs its callbacks, which take the
   * elector's own lock, and the elector's loop holds that lock while it reads the Lease and tells {@link #observed}.
   * When {@link #observed} took this runner's lock too, the two orders deadlocked the replica: it never elected again
   * and could not even stop (seen in the chaos soak). Neither waits for the other now.
   */
  private void electNow(java.time.ZonedDateTime renewed) {
    synchronized (renewalLock) {
      if (!renewed.equals(observedRenewal)) {
        return; // renewed since
      }
    }
    CompletableFuture<?> old;
    synchronized (this) {
      if (closed || allocator.isLeading() || election == null) {
        return; // closed, leading, or a fresh elector is being started already
      }
      LOG.info("{}: the allocator's Lease was last renewed at {} and has expired: trying to take it over now",
          identity, renewed);
      old = election;
      election = null;
    }
    old.cancel(true);
    elect();
  }

  public String identity() {
    return identity;
  }

  /** True while this instance holds the Lease and allocates. */
  public boolean isLeader() {
    return allocator.isLeading();
  }

  /** The holder last seen on the Lease, if any. */
  public Optional<String> observedLeader() {
    return Optional.ofNullable(observedLeader);
  }

  /** The allocator, for its counters. */
  public Allocator allocator() {
    return allocator;
  }

  /**
   * Stops writing, waits for a pass in progress, releases the Lease (so another replica takes over at once) and
   * stops the informers.
   */
  @Override
  public void close() {
    CompletableFuture<?> f;
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      f = election;
    }
    allocator.stopLeading();
    allocator.awaitIdle(config.renewDeadline().toMillis());
    if (f != null) {
      f.cancel(true);
    }
    restarts.shutdownNow();
    if (staleView != null) {
      staleView.close();
    }
    allocator.close();
  }
}
