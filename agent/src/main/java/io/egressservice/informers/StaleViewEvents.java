package io.egressservice.informers;

import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.EventBuilder;
import io.fabric8.kubernetes.api.model.ObjectReference;
import io.fabric8.kubernetes.api.model.ObjectReferenceBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tells an admin, with a Kubernetes Event on the process's own object (the node agent: its Node; the allocator: its
 * Lease), when the process's view of the API goes stale (Warning {@value #STALE}: a watch down or the API server
 * silent for longer than the readiness bound, which kinds, since when) and when it has caught up again (Normal
 * {@value #CAUGHT_UP}: every watch up again, how long the view was stale).
 *
 * <p>A stale view usually means the API cannot be written either: each Event waits in a small outbox and is written
 * once the API takes it (retried at each poll), so the pair arrives when contact is back, with the times it
 * describes. At most one stale episode is told per {@code spacing} (a flapping watch cannot flood the API); a
 * caught-up Event is written only after its episode's stale one.
 */
public final class StaleViewEvents implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(StaleViewEvents.class);
  public static final String STALE = "ApiViewStale";
  public static final String CAUGHT_UP = "ApiViewCaughtUp";
  public static final Duration DEFAULT_SPACING = Duration.ofMinutes(5);
  private static final int OUTBOX = 4;
  private static final long POLL_MILLIS = 1000;

  /**
   * Who the Events are about and who writes them.
   *
   * @param involved the object ({@code kubectl describe} shows the Events there)
   * @param namespace where the Events are created
   * @param component the reporting component
   * @param instance the reporting instance (node name, allocator identity)
   * @param uid the involved object's uid when known ({@code kubectl describe} matches Events by it), asked at
   *     each write
   */
  public record Target(ObjectReference involved, String namespace, String component, String instance,
      Supplier<Optional<String>> uid) {
    public Target {
      Objects.requireNonNull(involved);
      Objects.requireNonNull(namespace);
      Objects.requireNonNull(component);
      Objects.requireNonNull(instance);
      Objects.requireNonNull(uid);
    }

    /**
     * The node agent's Node; like the kubelet's node Events, they live in namespace {@code default}. The uid comes
     * from the agent's Node cache (the agent may not get Nodes).
     */
    public static Target node(String nodeName, String component, Supplier<Optional<String>> uid) {
      return new Target(new ObjectReferenceBuilder().withApiVersion("v1").withKind("Node").withName(nodeName)
          .build(), "default", component, nodeName, uid);
    }

    /** The allocator's Lease, where its other Events about itself are. */
    public static Target lease(String namespace, String leaseName, String component, String identity,
        Supplier<Optional<String>> uid) {
      return new Target(new ObjectReferenceBuilder().withApiVersion("coordination.k8s.io/v1").withKind("Lease")
          .withNamespace(namespace).withName(leaseName).build(), namespace, component, identity, uid);
    }
  }

  private record Notice(String type, String reason, String message) {}

  private final KubernetesClient client;
  private final Supplier<Map<String, Double>> downKinds;
  private final Target target;
  private final BooleanSupplier telling;
  private final Duration spacing;
  private final Clock clock;
  private final Deque<Notice> outbox = new ArrayDeque<>();
  private final ScheduledExecutorService poller = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "stale-view-events");
    t.setDaemon(true);
    return t;
  });
  /** The current episode's start (System.nanoTime()), 0 while the view is fresh; poller thread only. */
  private long staleSinceNanos;
  private boolean episodeTold;
  private long lastToldNanos;
  private boolean everTold;

  /**
   * @param downKinds the kinds whose watch is down past the readiness bound, with the seconds since each was last
   *     up ({@link ApiConnectivity#downAges})
   * @param telling whether this process tells now (the allocator: only while leading); episodes are tracked anyway
   */
  public StaleViewEvents(KubernetesClient client, Supplier<Map<String, Double>> downKinds, Target target,
      BooleanSupplier telling, Duration spacing, Clock clock) {
    this.client = Objects.requireNonNull(client);
    this.downKinds = Objects.requireNonNull(downKinds);
    this.target = Objects.requireNonNull(target);
    this.telling = Objects.requireNonNull(telling);
    this.spacing = Objects.requireNonNull(spacing);
    this.clock = Objects.requireNonNull(clock);
  }

  public StaleViewEvents start() {
    poller.scheduleWithFixedDelay(() -> poll(System.nanoTime()), POLL_MILLIS, POLL_MILLIS, TimeUnit.MILLISECONDS);
    return this;
  }

  /** One look at the watches, then the outbox written as far as the API takes it. */
  void poll(long now) {
    try {
      judge(downKinds.get(), now);
      flush();
    } catch (RuntimeException e) {
      LOG.debug("stale view events: {}", e.toString());
    }
  }

  private void judge(Map<String, Double> down, long now) {
    if (!down.isEmpty() && staleSinceNanos == 0) {
      double oldest = down.values().stream().mapToDouble(Double::doubleValue).max().orElse(0);
      staleSinceNanos = now - (long) (oldest * 1e9);
      episodeTold = false;
      if (telling.getAsBoolean() && (!everTold || now - lastToldNanos >= spacing.toNanos())) {
        episodeTold = true;
        everTold = true;
        lastToldNanos = now;
        Instant since = clock.instant().minusMillis((long) (oldest * 1000)).truncatedTo(ChronoUnit.SECONDS);
        offer(new Notice("Warning", STALE, target.instance() + ": no watch of " + String.join(", ", kinds(down))
            + " since " + since + " (" + Math.round(oldest) + " s): changes of those kinds are not seen; the"
            + " last state applied is kept"));
      }
    } else if (down.isEmpty() && staleSinceNanos != 0) {
      long staleSeconds = Math.round((now - staleSinceNanos) / 1e9);
      staleSinceNanos = 0;
      if (episodeTold) {
        episodeTold = false;
        offer(new Notice("Normal", CAUGHT_UP, target.instance() + ": every watch is up again after " + staleSeconds
            + " s stale; the caches caught up and are applied again"));
      }
    }
  }

  private static List<String> kinds(Map<String, Double> down) {
    return down.keySet().stream().sorted().toList();
  }

  private void offer(Notice notice) {
    if (outbox.size() == OUTBOX) {
      outbox.removeFirst();
    }
    outbox.addLast(notice);
  }

  private void flush() {
    while (!outbox.isEmpty()) {
      Notice next = outbox.peekFirst();
      try {
        write(next);
        outbox.removeFirst();
      } catch (KubernetesClientException e) {
        LOG.debug("Event {} on {} {} not written yet (retried): {}", next.reason(), target.involved().getKind(),
            target.involved().getName(), e.getMessage());
        return;
      }
    }
  }

  private void write(Notice notice) {
    String ts = DateTimeFormatter.ISO_INSTANT.format(clock.instant().truncatedTo(ChronoUnit.SECONDS));
    Event event = new EventBuilder()
        .withNewMetadata()
            .withNamespace(target.namespace())
            .withName(target.involved().getName() + "."
                + UUID.randomUUID().toString().replace("-", "").substring(0, 16))
        .endMetadata()
        .withInvolvedObject(new ObjectReferenceBuilder(target.involved()).withUid(uid().orElse(null)).build())
        .withType(notice.type())
        .withReason(notice.reason())
        .withMessage(notice.message())
        .withFirstTimestamp(ts)
        .withLastTimestamp(ts)
        .withCount(1)
        .withNewSource().withComponent(target.component()).endSource()
        .withReportingComponent(target.component())
        .withReportingInstance(target.instance())
        .build();
    client.v1().events().inNamespace(target.namespace()).resource(event).create();
  }

  private Optional<String> uid() {
    try {
      return target.uid().get();
    } catch (RuntimeException e) {
      return Optional.empty();
    }
  }

  @Override
  public void close() {
    poller.shutdownNow();
  }
}
