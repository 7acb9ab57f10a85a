package io.egressservice.allocator;

import io.egressservice.events.EventWriter;
import io.egressservice.model.ObjectRef;
import io.fabric8.kubernetes.api.model.ObjectReferenceBuilder;
import io.fabric8.kubernetes.api.model.coordination.v1.Lease;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tells an admin, on the allocator's Lease ({@code kubectl describe lease -n <ns> egress-service-allocator}), when
 * the leading replica begins suspecting its own path to the nodes (Warning {@code AllocatorSelfSuspected}: which
 * nodes fail, and that no host moves meanwhile) and when that ends (Normal {@code AllocatorSelfSuspicionEnded}).
 * One Event per episode, and episodes' Events at least {@code spacing} apart: a flapping path cannot flood the API.
 * The writes happen on {@code executor}, never on the probe thread that reports.
 */
final class SelfSuspicionEvents implements Allocator.Listener {
  private static final Logger LOG = LoggerFactory.getLogger(SelfSuspicionEvents.class);
  static final String SUSPECTED = "AllocatorSelfSuspected";
  static final String ENDED = "AllocatorSelfSuspicionEnded";
  static final Duration DEFAULT_SPACING = Duration.ofMinutes(1);

  private final KubernetesClient client;
  private final String namespace;
  private final String leaseName;
  private final String identity;
  private final BooleanSupplier leading;
  private final Executor executor;
  private final Duration spacing;
  private final EventWriter eventWriter;
  /** When the last "suspected" Event was written (monotonic), or never; guarded by this. */
  private long lastWrittenNanos;
  private boolean written;
  /** Whether this episode's beginning was told (its end is told only then). Guarded by this. */
  private boolean episodeTold;

  SelfSuspicionEvents(KubernetesClient client, String namespace, String leaseName, String identity,
      BooleanSupplier leading, Executor executor, Duration spacing) {
    this.client = Objects.requireNonNull(client);
    this.namespace = Objects.requireNonNull(namespace);
    this.leaseName = Objects.requireNonNull(leaseName);
    this.identity = Objects.requireNonNull(identity);
    this.leading = Objects.requireNonNull(leading);
    this.executor = Objects.requireNonNull(executor);
    this.spacing = Objects.requireNonNull(spacing);
    this.eventWriter = new EventWriter(client, Allocator.COMPONENT, identity, null, Map.of(), Clock.systemUTC());
  }

  @Override
  public void failover(ObjectRef service, String from, String to, double seconds) {}

  @Override
  public void hostChanged(ObjectRef service, String from, String to, long epochSeconds) {}

  @Override
  public void selfSuspected(boolean suspected, HostHealth.Suspicion judgment) {
    if (!leading.getAsBoolean()) {
      return;
    }
    String message;
    synchronized (this) {
      long now = System.nanoTime();
      if (suspected) {
        if (written && now - lastWrittenNanos < spacing.toNanos()) {
          episodeTold = false;
          return;
        }
        written = true;
        lastWrittenNanos = now;
        episodeTold = true;
        message = judgment.failing().size() + " of " + judgment.judged() + " probed nodes fail at once ("
            + String.join(", ", judgment.failing()) + "): the allocator " + identity + " suspects its own path to the "
            + "nodes and keeps every service's host; no node is drained until most of them answer again";
      } else {
        if (!episodeTold) {
          return;
        }
        episodeTold = false;
        message = "most probed nodes answer the allocator " + identity + " again (" + judgment.failing().size()
            + " of " + judgment.judged() + " failing): silent nodes are drained again";
      }
    }
    try {
      executor.execute(() -> write(suspected ? "Warning" : "Normal", suspected ? SUSPECTED : ENDED, message));
    } catch (RejectedExecutionException e) {
      // closing
    }
  }

  private void write(String type, String reason, String message) {
    try {
      Lease lease = client.leases().inNamespace(namespace).withName(leaseName).get();
      eventWriter.create(new ObjectReferenceBuilder()
          .withApiVersion("coordination.k8s.io/v1")
          .withKind("Lease")
          .withNamespace(namespace)
          .withName(leaseName)
          .withUid(lease == null ? null : lease.getMetadata().getUid())
          .build(), type, reason, message);
    } catch (KubernetesClientException e) {
      LOG.warn("{}: could not write Event {} on the Lease {}/{}: {}", identity, reason, namespace, leaseName,
          e.getMessage());
    }
  }
}
