package io.egressservice.controller;

import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.DoubleConsumer;

/**
 * When the worker reconciles next. Triggers mark the node dirty, and any number of them that arrive meanwhile make
 * one reconcile; reconciles start no closer together than {@link Pacing} allows (longer during a burst of API
 * events); after a failure the retry waits out its backoff unless an API change came; the periodic resync comes at
 * the latest. The wait wakes at least every second, so the loop shows it is alive and a changed nftables
 * generation (someone edited nft; there is no rtnetlink notification for that) is noticed.
 */
final class ReconcileTriggers {
  /** The cause of the next reconcile ({@code NodeAgent.TRIGGER_*}) and whether an API change is among them. */
  record Due(String cause, boolean api) {}

  /**
   * The work waiting for the worker: triggers received since the last reconcile began, and how long the oldest of
   * them has waited (0 when none waits), like controller-runtime's work-queue depth and its oldest item's age.
   */
  record Pending(int triggers, double oldestSeconds) {}

  private final Object lock = new Object();
  private final BooleanSupplier kernelEdited;
  private final Runnable awake;
  private final DoubleConsumer intervalSeconds;
  private final Pacing pacing = new Pacing();
  private final BurstLog burst = new BurstLog();
  private boolean dirty;
  private boolean apiDirty;
  private int apiEventsSinceStart;
  private long lastReconcileStartNanos = System.nanoTime() - Pacing.MIN_INTERVAL_NANOS;
  private String pendingTrigger = NodeAgent.TRIGGER_STARTUP;
  private int pendingTriggers;
  /** When the oldest trigger not yet taken by a reconcile came (System.nanoTime()); 0 when none waits. */
  private long pendingSinceNanos;
  private volatile boolean running;

  /**
   * @param kernelEdited asked while idle: whether someone edited nft since the last reconcile (it then doubts the
   *     kernel view)
   * @param awake called whenever the wait wakes (the loop is alive)
   * @param intervalSeconds told the pacing interval as each reconcile starts
   */
  ReconcileTriggers(BooleanSupplier kernelEdited, Runnable awake, DoubleConsumer intervalSeconds) {
    this.kernelEdited = kernelEdited;
    this.awake = awake;
    this.intervalSeconds = intervalSeconds;
  }

  void start() {
    running = true;
  }

  boolean running() {
    return running;
  }

  /** Stops the waits; {@link #awaitDue} returns empty. */
  void stop() {
    running = false;
    synchronized (lock) {
      lock.notifyAll();
    }
  }

  /** Marks the node dirty; the worker reconciles once for any number of triggers that arrive meanwhile. */
  void trigger(String cause) {
    synchronized (lock) {
      dirty = true;
      waiting();
      if (NodeAgent.TRIGGER_API.equals(cause)) {
        apiDirty = true;
        apiEventsSinceStart++;
      }
      pendingTrigger = cause;
      lock.notifyAll();
    }
  }

  /** Counts one more trigger waiting; the first one starts the wait's clock. */
  private void waiting() {
    pendingTriggers++;
    if (pendingSinceNanos == 0) {
      pendingSinceNanos = System.nanoTime();
    }
  }

  Pending pending() {
    synchronized (lock) {
      long since = pendingSinceNanos;
      return new Pending(pendingTriggers, since == 0 ? 0 : (System.nanoTime() - since) / 1e9);
    }
  }

  /** The informers synced: the first reconcile is due (the initial listing is not a burst). */
  void synced() {
    synchronized (lock) {
      dirty = true;
      waiting();
      pendingTrigger = NodeAgent.TRIGGER_STARTUP;
      apiEventsSinceStart = 0;
    }
  }

  /** Waits up to {@code millis} for a trigger (before the informers synced). */
  void pause(long millis) throws InterruptedException {
    synchronized (lock) {
      lock.wait(millis);
    }
  }

  /** A failed reconcile: its retry is due once the backoff passed. */
  void retry() {
    synchronized (lock) {
      dirty = true;
      waiting();
    }
  }

  /**
   * Waits until a reconcile is due; empty once stopped.
   *
   * @param nextResync when the periodic resync is due (System.nanoTime())
   * @param notBefore the end of a failed reconcile's backoff, or 0
   * @param failing whether the last reconcile failed (a reconcile without a new cause is then a retry)
   */
  Optional<Due> awaitDue(long nextResync, long notBefore, boolean failing) throws InterruptedException {
    synchronized (lock) {
      while (running) {
        long now = System.nanoTime();
        long settledAt = lastReconcileStartNanos + pacing.intervalNanos();
        // The backoff holds retries of the same inputs; an API change may be what fixes the failure (the
        // offending object deleted), so it is reconciled at the normal pace.
        long retryAt = apiDirty ? 0 : notBefore;
        if (dirty && now >= retryAt && now >= settledAt) {
          break;
        }
        if (now >= nextResync) {
          dirty = true;
          waiting();
          pendingTrigger = NodeAgent.TRIGGER_RESYNC;
          break;
        }
        long until = dirty ? Math.min(Math.max(retryAt, settledAt), nextResync) : nextResync;
        long waitMillis = Math.max(1, Math.min(1000, TimeUnit.NANOSECONDS.toMillis(until - now)));
        lock.wait(waitMillis);
        awake.run();
        if (!dirty && kernelEdited.getAsBoolean()) {
          dirty = true;
          waiting();
          pendingTrigger = NodeAgent.TRIGGER_KERNEL;
        }
      }
      if (!running) {
        return Optional.empty();
      }
      long now = System.nanoTime();
      long elapsed = now - lastReconcileStartNanos;
      long current = pacing.intervalNanos();
      long next = pacing.reconcileStarts(apiEventsSinceStart, elapsed);
      burst.observe(now, apiEventsSinceStart, elapsed, current, next);
      lastReconcileStartNanos = now;
      apiEventsSinceStart = 0;
      intervalSeconds.accept(next / 1e9);
      String cause = failing && !apiDirty && !NodeAgent.TRIGGER_KERNEL.equals(pendingTrigger)
          ? NodeAgent.TRIGGER_RETRY : pendingTrigger;
      Due due = new Due(cause, apiDirty);
      dirty = false;
      apiDirty = false;
      pendingTriggers = 0;
      pendingSinceNanos = 0;
      return Optional.of(due);
    }
  }
}
