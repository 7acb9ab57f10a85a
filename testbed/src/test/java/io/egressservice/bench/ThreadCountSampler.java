package io.egressservice.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * The agent's thread count (the Threads line of /proc/PID/status) every 200 ms from its launch until {@link #stop}:
 * the bench reports the maximum during a 5,000-service start and when it was reached (startup Events once made a
 * thread per HTTP response). A daemon thread of the bench's JVM, so its reads cost the agent nothing.
 */
final class ThreadCountSampler implements AutoCloseable {
  static final long PERIOD_MS = 200;

  private final Path status;
  private final long t0;
  private final Thread thread;
  private volatile boolean running = true;
  private int samples;
  private int max;
  private double maxAtS;
  private int last;

  /** Starts sampling process {@code pid}; {@code t0} is the nanoTime of its launch, the origin of the times. */
  ThreadCountSampler(long pid, long t0) {
    this.status = Path.of("/proc", Long.toString(pid), "status");
    this.t0 = t0;
    this.thread = new Thread(this::run, "thread-count-sampler");
    thread.setDaemon(true);
    thread.start();
  }

  private void run() {
    while (running) {
      int n = threads();
      if (n < 0) {
        return; // the process is gone
      }
      synchronized (this) {
        samples++;
        last = n;
        if (n > max) {
          max = n;
          maxAtS = (System.nanoTime() - t0) / 1e9;
        }
      }
      try {
        Thread.sleep(PERIOD_MS);
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  private int threads() {
    try {
      for (String line : Files.readAllLines(status)) {
        if (line.startsWith("Threads:")) {
          return Integer.parseInt(line.substring("Threads:".length()).trim());
        }
      }
    } catch (IOException | RuntimeException e) {
      // the process exited between two reads
    }
    return -1;
  }

  /** Stops sampling; returns what it saw, e.g. "max 31 threads at 12.4 s after launch, 27 at the end (812 samples)". */
  synchronized String stop() {
    running = false;
    thread.interrupt();
    return String.format(Locale.ROOT, "max %d threads at %.1f s after launch, %d at the last sample %.1f s after launch"
        + " (%d samples every %d ms)", max, maxAtS, last, (System.nanoTime() - t0) / 1e9, samples, PERIOD_MS);
  }

  synchronized int max() {
    return max;
  }

  @Override
  public void close() {
    running = false;
    thread.interrupt();
  }
}
