package io.egressservice.lifecycle;

import java.util.concurrent.ForkJoinPool;

/**
 * Keeps {@code CompletableFuture}'s default executor a pool. With two CPUs (a DaemonSet's usual request or limit) the
 * common pool's parallelism is one, and then {@code CompletableFuture} runs every task without an executor on a new
 * thread of its own. The JDK's HttpClient hands every {@code sendAsync} response to that executor (JDK 17
 * {@code HttpClientImpl.sendAsync}: "makes sure that any dependent actions happen in the CF default executor"), and
 * fabric8 sends every request that way: each Event written, each list page, each patch started and ended a thread
 * (measured: 1,004 threads started for 1,000 Events). A parallelism of two makes it the common pool, two threads at
 * most, kept; the tasks it runs are the no-op completions of that hand-off.
 *
 * <p>The property is read once, when the common pool is made (the first use of {@code ForkJoinPool} or {@code
 * CompletableFuture}); so this runs first thing in {@code main}. An operator's own setting is kept.
 */
public final class AsyncPool {
  static final String PARALLELISM = "java.util.concurrent.ForkJoinPool.common.parallelism";
  static final int MIN_PARALLELISM = 2;

  private AsyncPool() {}

  /** Before the common pool exists: at least {@value #MIN_PARALLELISM} threads. True when the pool is a pool. */
  public static boolean bound() {
    if (System.getProperty(PARALLELISM) == null
        && Runtime.getRuntime().availableProcessors() - 1 < MIN_PARALLELISM) {
      System.setProperty(PARALLELISM, Integer.toString(MIN_PARALLELISM));
    }
    return bounded();
  }

  /** Whether {@code CompletableFuture}'s default executor is the common pool rather than a thread per task. */
  public static boolean bounded() {
    return ForkJoinPool.getCommonPoolParallelism() > 1;
  }
}
