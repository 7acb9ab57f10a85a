package io.egressservice.netlink;

import java.util.Optional;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

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

  /**
   * A subscription that an in-memory {@link Routing} feeds instead of the kernel: each event given to the returned
   * {@link Feed#sink()} reaches {@code listener} on the subscription's own thread, in the order given, as the kernel's
   * notifications do (so a listener never runs on the stack of the call that made the change), and {@link
   * Feed#overflow()} runs {@code onOverflow} there as a lost notification would; nothing after {@link #close()}. A
   * listener that throws is logged and delivery goes on. Needs no privileges: the thread stays in the process's
   * namespace.
   */
  public static Feed fed(String description, Consumer<ChangeEvent> listener, Runnable onOverflow) {
    NetnsThread t = NetnsThread.enter(Optional.empty());
    Subscription sub = new Subscription(t, description);
    t.call(() -> {
      sub.runningOn(Thread.currentThread());
      return null;
    });
    Consumer<Runnable> onThread = task -> {
      if (sub.closing()) {
        return;
      }
      try {
        t.submit(() -> {
          if (!sub.closing()) {
            try {
              task.run();
            } catch (RuntimeException e) {
              System.getLogger(Subscription.class.getName()).log(System.Logger.Level.WARNING,
                  sub + ": listener failed: " + e, e);
            }
          }
        });
      } catch (RejectedExecutionException e) {
        // closed meanwhile: nothing is delivered, as after close()
      }
    };
    return new Feed(sub, event -> onThread.accept(() -> {
      sub.countDelivered();
      listener.accept(event);
    }), () -> onThread.accept(() -> {
      sub.countOverflow();
      onOverflow.run();
    }));
  }

  /** A {@link #fed} subscription, where its events go in, and how to make it lose some. */
  public record Feed(Subscription subscription, Consumer<ChangeEvent> sink, Runnable overflow) {}

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
