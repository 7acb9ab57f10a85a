package io.egressservice.controller;

import io.egressservice.plan.ObjectRef;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Hands Events to their sink on a thread of its own, so that writing them never delays a reconcile:
 * with the API server unreachable a client call can block for as long as its retries last, and
 * drift repair must go on meanwhile. Bounded: when the API server cannot keep up, the newest Events
 * are dropped (and counted in the log), never the reconcile loop's time.
 */
final class EventQueue implements EventSink, AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(EventQueue.class);
  static final int CAPACITY = 1024;
  private static final java.time.Duration CLOSE_GRACE = java.time.Duration.ofSeconds(2);

  private record Pending(ObjectRef egressService, String type, String reason, String message) {}

  private final EventSink sink;
  private final BlockingQueue<Pending> queue = new LinkedBlockingQueue<>(CAPACITY);
  private final AtomicLong dropped = new AtomicLong();
  private final Thread writer;
  private volatile boolean open = true;

  EventQueue(EventSink sink, String threadName) {
    this.sink = sink;
    this.writer = new Thread(this::drain, threadName);
    writer.setDaemon(true);
    writer.start();
  }

  @Override
  public void emit(ObjectRef egressService, String type, String reason, String message) {
    if (!open || !queue.offer(new Pending(egressService, type, reason, message))) {
      long n = dropped.incrementAndGet();
      if (n == 1 || n % 100 == 0) {
        LOG.warn("{} Event(s) not written so far: the API server does not keep up (last: {} on {})", n, reason,
            egressService);
      }
    }
  }

  private void drain() {
    try {
      while (open || !queue.isEmpty()) {
        Pending p = queue.poll(200, TimeUnit.MILLISECONDS);
        if (p != null) {
          try {
            sink.emit(p.egressService(), p.type(), p.reason(), p.message());
          } catch (RuntimeException e) {
            LOG.warn("could not write Event {} on EgressService {}: {}", p.reason(), p.egressService(), e.getMessage());
          }
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Writes what is queued for up to {@link #CLOSE_GRACE}, then gives up on the rest. */
  @Override
  public void close() {
    open = false;
    try {
      writer.join(CLOSE_GRACE.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (writer.isAlive()) {
      writer.interrupt();
      LOG.info("{} Event(s) left unwritten at shutdown", queue.size());
    }
  }
}
