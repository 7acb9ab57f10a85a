package io.egressservice.controller;

import io.egressservice.controller.EventSink.Written;
import io.egressservice.metrics.AgentMetrics;
import io.egressservice.model.ObjectRef;
import java.time.Clock;
import java.time.Duration;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes the reporter's Events on a thread of its own, at a lower CPU priority ({@link
 * io.egressservice.lifecycle.LowPriority}), so that neither the API server nor the writing delays a
 * reconcile, and keeps what the API server gets bounded whatever the outcomes do:
 *
 * <ul>
 *   <li><b>coalesced</b>: one Event waits per service and {@linkplain OutcomeReporter.Channel channel}; a
 *       newer one replaces it (the one replaced is counted as dropped, cause {@code superseded}), so what
 *       is written last is always the latest outcome;
 *   <li><b>aggregated</b>: an Event that says what an earlier one of this node said (same service, type,
 *       reason, and message but for counts) is a repeat of it: its count and last time go up, no new Event;
 *   <li><b>rate-limited</b>: a token bucket per service and one overall ({@link EventLimits}); what has no
 *       token waits (and may be superseded meanwhile);
 *   <li><b>continued across restarts</b>: before anything is written, this node's existing Events are
 *       listed; they seed the aggregation, and the last one per service and channel is handed to the
 *       reporter ({@code onSeed}), which then reports only what changed since.
 * </ul>
 */
final class EventRecorder implements OutcomeReporter.Recorder, AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(EventRecorder.class);
  private static final Duration CLOSE_GRACE = Duration.ofSeconds(2);
  private static final int MAX_ATTEMPTS = 3;
  private static final int SEED_ATTEMPTS = 4;
  private static final int AGGREGATION_ENTRIES = 8192;

  private record Key(ObjectRef object, OutcomeReporter.Channel channel) {}

  private record AggregationKey(ObjectRef object, String type, String reason, String message) {
    static AggregationKey of(EventRecord e) {
      return new AggregationKey(e.object(), e.type(), e.reason(), EventRecord.withoutCounts(e.message()));
    }
  }

  private record Pending(EventRecord event, int attempts) {}

  private final EventSink sink;
  private final AgentMetrics metrics;
  private final EventLimits limits;
  private final Clock clock;
  private final Thread writer;
  private final Object lock = new Object();
  private final LinkedHashMap<Key, Pending> pending = new LinkedHashMap<>();
  private final Map<ObjectRef, TokenBucket> perService = new HashMap<>();
  private final TokenBucket overall;
  /** Earlier Events by what they say, least recently used first (writer thread only). */
  private final LinkedHashMap<AggregationKey, Written> written = new LinkedHashMap<>(256, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<AggregationKey, Written> eldest) {
      return size() > AGGREGATION_ENTRIES;
    }
  };
  private volatile boolean open = true;
  private volatile boolean writing;
  private volatile boolean seeded;
  private long pausedUntil;
  private int consecutiveFailures;
  private Consumer<Map<ObjectRef, EnumMap<OutcomeReporter.Channel, EventRecord>>> onSeed = s -> {};

  EventRecorder(EventSink sink, AgentMetrics metrics, EventLimits limits, Clock clock, String threadName) {
    this.sink = sink;
    this.metrics = metrics;
    this.limits = limits;
    this.clock = clock;
    this.overall = new TokenBucket(limits.burst(), limits.refill().toNanos(), System.nanoTime());
    this.writer = new Thread(this::run, threadName);
    writer.setDaemon(true);
  }

  /** Lists this node's earlier Events, hands the last per service and channel to {@code onSeed}, then writes. */
  void start(Consumer<Map<ObjectRef, EnumMap<OutcomeReporter.Channel, EventRecord>>> onSeed) {
    this.onSeed = onSeed;
    writer.start();
  }

  /** Queues an Event; returns at once. */
  @Override
  public void record(OutcomeReporter.Channel channel, EventRecord e) {
    synchronized (lock) {
      Key key = new Key(e.object(), channel);
      if (!open) {
        metrics.eventDropped("shutdown");
        return;
      }
      if (pending.containsKey(key)) {
        metrics.eventDropped("superseded");
      } else if (pending.size() >= limits.maxPending()) {
        metrics.eventDropped("queue_full");
        return;
      }
      pending.put(key, new Pending(e, 0));
      lock.notifyAll();
    }
  }

  /** Seeded, nothing waiting and nothing being written: everything recorded so far has been dealt with. */
  boolean idle() {
    synchronized (lock) {
      return seeded && pending.isEmpty() && !writing;
    }
  }

  private void run() {
    // A start's thousands of Events are background work: at a lower priority they never take CPU from a reconcile.
    if (!io.egressservice.lifecycle.LowPriority.lowerCurrentThreadBy(io.egressservice.lifecycle.LowPriority.BACKGROUND)) {
      LOG.debug("the Events writer runs at the agent's priority (setpriority refused)");
    }
    try {
      seed();
      while (open || hasPending()) {
        Map.Entry<Key, Pending> next = takeNext();
        if (next != null) {
          write(next.getKey(), next.getValue());
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private boolean hasPending() {
    synchronized (lock) {
      return !pending.isEmpty();
    }
  }

  private void seed() throws InterruptedException {
    List<Written> earlier = List.of();
    for (int attempt = 1; open; attempt++) {
      try {
        earlier = sink.written();
        break;
      } catch (RuntimeException e) {
        if (attempt >= SEED_ATTEMPTS) {
          LOG.warn("could not list this node's earlier Events ({}); outcomes already reported before this start are"
              + " reported again", e.getMessage());
          break;
        }
        Thread.sleep(Math.min(8000, 1000L << (attempt - 1)));
      }
    }
    Map<ObjectRef, EnumMap<OutcomeReporter.Channel, EventRecord>> last = new HashMap<>();
    for (Written w : earlier) { // oldest first: the last one per channel wins
      written.put(AggregationKey.of(w.event()), w);
      OutcomeReporter.Channel.of(w.event().reason()).ifPresent(ch ->
          last.computeIfAbsent(w.event().object(), o -> new EnumMap<>(OutcomeReporter.Channel.class)).put(ch, w.event()));
    }
    if (!earlier.isEmpty()) {
      LOG.info("going on from {} Event(s) this node wrote before, on {} EgressService(s)", earlier.size(), last.size());
    }
    onSeed.accept(last);
    synchronized (lock) {
      seeded = true;
    }
  }

  /** The oldest waiting Event that has tokens, after waiting for one; null to look again. */
  private Map.Entry<Key, Pending> takeNext() throws InterruptedException {
    synchronized (lock) {
      long now = System.nanoTime();
      if (now < pausedUntil && open) {
        lock.wait(Math.max(1, TimeUnit.NANOSECONDS.toMillis(pausedUntil - now)));
        return null;
      }
      long wait = TimeUnit.MILLISECONDS.toNanos(200);
      if (!overall.available(now)) {
        wait = Math.min(wait, overall.nanosUntilToken(now));
      } else {
        for (Iterator<Map.Entry<Key, Pending>> it = pending.entrySet().iterator(); it.hasNext(); ) {
          Map.Entry<Key, Pending> e = it.next();
          TokenBucket b = perService.computeIfAbsent(e.getKey().object(),
              o -> new TokenBucket(limits.perServiceBurst(), limits.perServiceRefill().toNanos(), now));
          if (b.tryTake(now)) {
            overall.tryTake(now);
            it.remove();
            writing = true;
            forgetIdleBuckets(now);
            return Map.entry(e.getKey(), e.getValue());
          }
          wait = Math.min(wait, b.nanosUntilToken(now));
        }
      }
      if (!open && !pending.isEmpty() && wait > 0) {
        // closing: what still has no token is not written
        pending.values().forEach(p -> metrics.eventDropped("shutdown"));
        pending.clear();
        return null;
      }
      lock.wait(Math.max(1, TimeUnit.NANOSECONDS.toMillis(wait)));
      return null;
    }
  }

  private void forgetIdleBuckets(long now) {
    if (perService.size() > 2 * limits.maxPending()) {
      perService.values().removeIf(b -> b.full(now));
    }
  }

  private void write(Key key, Pending p) {
    EventRecord e = p.event();
    AggregationKey ak = AggregationKey.of(e);
    try {
      Written earlier = written.get(ak);
      Written now = null;
      if (earlier != null) {
        int count = earlier.count() + 1;
        if (sink.repeat(earlier, e, count)) {
          now = earlier.repeated(e, count, clock.instant());
          metrics.eventWritten("patch");
        }
      }
      if (now == null) {
        now = sink.create(e);
        metrics.eventWritten("create");
      }
      written.put(ak, now);
      consecutiveFailures = 0;
    } catch (RuntimeException ex) {
      consecutiveFailures++;
      if (consecutiveFailures == 1 || consecutiveFailures % 20 == 0) {
        LOG.warn("could not write Event {} on EgressService {} ({} failure(s) in a row): {}", e.reason(), e.object(),
            consecutiveFailures, ex.getMessage());
      }
      synchronized (lock) {
        pausedUntil = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Math.min(30_000, 500L << Math.min(consecutiveFailures, 6)));
        if (p.attempts() + 1 < MAX_ATTEMPTS && open && !pending.containsKey(key)) {
          pending.put(key, new Pending(e, p.attempts() + 1));
        } else {
          metrics.eventDropped("failed");
        }
      }
    } finally {
      synchronized (lock) {
        writing = false;
      }
    }
  }

  /** Writes what has tokens for up to {@link #CLOSE_GRACE}, then gives up on the rest. */
  @Override
  public void close() {
    synchronized (lock) {
      open = false;
      lock.notifyAll();
    }
    if (!writer.isAlive()) {
      return;
    }
    try {
      writer.join(CLOSE_GRACE.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (writer.isAlive()) {
      writer.interrupt();
      synchronized (lock) {
        if (!pending.isEmpty()) {
          LOG.info("{} Event(s) left unwritten at shutdown", pending.size());
        }
        pending.values().forEach(p -> metrics.eventDropped("shutdown"));
        pending.clear();
      }
    }
  }
}
