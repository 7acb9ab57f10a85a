package io.egressservice.reconcile;

import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.DoubleConsumer;
import java.util.function.Supplier;
import org.slf4j.Logger;

/**
 * When the worker reconciles next. Triggers mark the work dirty, and any number of them that arrive meanwhile make
 * one reconcile; reconciles start no closer together than {@link Pacing} allows (longer during a burst of changes);
 * after a failure the retry waits out its backoff unless a change came; the periodic resync comes at the latest. The
 * wait wakes at least every second, so the loop shows it is alive and the owner's idle check (the node agent: a
 * changed nftables generation, for which there is no notification) runs.
 */
final class Triggers {
  private final Object lock = new Object();
  private final BooleanSupplier idleCheck;
  private final Supplier<String> idleCause;
  private final Runnable awake;
  private final DoubleConsumer intervalSeconds;
  private final Pacing pacing;
  private final BurstLog burst;
  private boolean dirty;
  /** A change is among the triggers waiting: it is reconciled at the normal pace even while a failure backs off. */
  private boolean changeDirty;
  /** The next reconcile is not held by the pacing or a backoff (a new leadership term: failover waits for nothing). */
  private boolean now;
  private int changesSinceStart;
  private long lastReconcileStartNanos;
  private String pendingTrigger = ReconcileLoop.STARTUP;
  /** Whether {@link #pendingTrigger} came with a change (a retry of a failed change is named a retry). */
  private boolean pendingIsChange;
  private int pendingTriggers;
  /** When the oldest trigger not yet taken by a reconcile came (System.nanoTime()); 0 when none waits. */
  private long pendingSinceNanos;
  private volatile boolean running;

  /**
   * @param idleCheck asked while idle: whether there is work no trigger told of (a reconcile named by
   *     {@code idleCause} is then due)
   * @param awake called whenever the wait wakes (the loop is alive)
   * @param intervalSeconds told the pacing interval as each reconcile starts
   */
  Triggers(Pacing pacing, Logger log, BooleanSupplier idleCheck, Supplier<String> idleCause, Runnable awake,
      DoubleConsumer intervalSeconds) {
    this.pacing = pacing;
    this.burst = new BurstLog(log, pacing);
    this.lastReconcileStartNanos = System.nanoTime() - pacing.minNanos();
    this.idleCheck = idleCheck;
    this.idleCause = idleCause;
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

  /** Something may need reconciling; waits out a failure's backoff, and keeps its name while retrying. */
  void trigger(String cause) {
    mark(cause, false, false);
  }

  /** The inputs changed: reconciled at the pace even while a failure backs off, and counted for bursts. */
  void changed(String cause) {
    mark(cause, true, false);
  }

  /** Reconciles as soon as the worker is free, held by neither the pacing nor a backoff. */
  void now(String cause) {
    mark(cause, true, true);
  }

  private void mark(String cause, boolean change, boolean immediate) {
    synchronized (lock) {
      dirty = true;
      waiting();
      if (change) {
        changeDirty = true;
        changesSinceStart++;
      }
      now |= immediate;
      pendingTrigger = cause;
      pendingIsChange = change;
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

  ReconcileLoop.Pending pending() {
    synchronized (lock) {
      long since = pendingSinceNanos;
      return new ReconcileLoop.Pending(pendingTriggers, since == 0 ? 0 : (System.nanoTime() - since) / 1e9);
    }
  }

  /** The loop may start: the first reconcile is due (what arrived before, the initial listing, is not a burst). */
  void started() {
    synchronized (lock) {
      dirty = true;
      waiting();
      pendingTrigger = ReconcileLoop.STARTUP;
      pendingIsChange = false;
      changesSinceStart = 0;
    }
  }

  /** Waits up to {@code millis} for a trigger (before the loop may start). */
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
   * Waits until a reconcile is due; empty once stopped, or once {@code wakeBy} passed with none due.
   *
   * @param nextResync when the periodic resync is due (System.nanoTime())
   * @param notBefore the end of a failed reconcile's backoff, or 0
   * @param failing whether the last reconcile failed (a reconcile without a new cause is then a retry)
   * @param wakeBy when the worker has other work (System.nanoTime()), or {@link Long#MAX_VALUE}
   */
  Optional<Due> awaitDue(long nextResync, long notBefore, boolean failing, long wakeBy) throws InterruptedException {
    synchronized (lock) {
      while (running) {
        long t = System.nanoTime();
        long settledAt = now ? 0 : lastReconcileStartNanos + pacing.intervalNanos();
        // The backoff holds retries of the same inputs; a change may be what fixes the failure (the offending
        // object deleted), so it is reconciled at the normal pace.
        long retryAt = changeDirty ? 0 : notBefore;
        if (dirty && t >= retryAt && t >= settledAt) {
          break;
        }
        if (t >= nextResync) {
          dirty = true;
          waiting();
          pendingTrigger = ReconcileLoop.RESYNC;
          pendingIsChange = false;
          break;
        }
        if (t >= wakeBy) {
          return Optional.empty();
        }
        long until = Math.min(dirty ? Math.min(Math.max(retryAt, settledAt), nextResync) : nextResync, wakeBy);
        long waitMillis = Math.max(1, Math.min(1000, TimeUnit.NANOSECONDS.toMillis(until - t)));
        lock.wait(waitMillis);
        awake.run();
        if (!dirty && idleCheck.getAsBoolean()) {
          dirty = true;
          waiting();
          pendingTrigger = idleCause.get();
          pendingIsChange = false;
        }
      }
      if (!running) {
        return Optional.empty();
      }
      long t = System.nanoTime();
      long elapsed = t - lastReconcileStartNanos;
      long current = pacing.intervalNanos();
      long next = pacing.reconcileStarts(changesSinceStart, elapsed);
      burst.observe(t, changesSinceStart, elapsed, current, next);
      lastReconcileStartNanos = t;
      changesSinceStart = 0;
      intervalSeconds.accept(next / 1e9);
      boolean named = !pendingIsChange && !ReconcileLoop.OWN_CAUSES.contains(pendingTrigger);
      String cause = failing && !changeDirty && !named ? ReconcileLoop.RETRY : pendingTrigger;
      Due due = new Due(cause, changeDirty);
      dirty = false;
      changeDirty = false;
      now = false;
      pendingTriggers = 0;
      pendingSinceNanos = 0;
      return Optional.of(due);
    }
  }
}
