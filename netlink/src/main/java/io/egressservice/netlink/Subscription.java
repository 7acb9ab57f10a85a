package io.egressservice.netlink;

import java.util.concurrent.atomic.AtomicLong;

/**
 * A live subscription to rtnetlink notifications (see {@link RtNetlink#subscribe}). Events are
 * delivered on the subscription's own thread, in kernel order. {@link #close()} stops delivery
 * within about {@value #POLL_MILLIS} ms and releases the socket and the thread.
 */
public final class Subscription implements AutoCloseable {
  static final int POLL_MILLIS = 200;

  private final NetnsThread thread;
  private final String description;
  private volatile boolean closed;
  private volatile Thread loopThread;
  private final AtomicLong overflows = new AtomicLong();
  private final AtomicLong delivered = new AtomicLong();

  Subscription(NetnsThread thread, String description) {
    this.thread = thread;
    this.description = description;
  }

  void runningOn(Thread t) {
    loopThread = t;
  }

  boolean closing() {
    return closed;
  }

  void countOverflow() {
    overflows.incrementAndGet();
  }

  void countDelivered() {
    delivered.incrementAndGet();
  }

  /**
   * How many times the kernel dropped notifications because the listener fell behind (ENOBUFS).
   * After an overflow the listener's view is stale: re-list what it cares about.
   */
  public long overflows() {
    return overflows.get();
  }

  /** Events handed to the listener so far. */
  public long delivered() {
    return delivered.get();
  }

  public boolean isClosed() {
    return closed;
  }

  @Override
  public String toString() {
    return description;
  }

  /** Stops delivery; may also be called from inside the listener (then it returns at once). */
  @Override
  public void close() {
    if (!closed) {
      closed = true;
      if (Thread.currentThread() == loopThread) {
        // Waiting for our own thread to end would wait for ourselves: let another thread do it.
        Thread closer = new Thread(thread::close, "close-" + thread.describe());
        closer.setDaemon(true);
        closer.start();
      } else {
        thread.close();
      }
    }
  }
}
