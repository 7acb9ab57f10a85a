package io.egressservice.lifecycle;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryUsage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One full collection after the start, so the heap the start needed goes back to the kernel. A start decodes every
 * Service and EndpointSlice of the cluster (it keeps only the opted-in ones): pages of them live long enough to be
 * promoted, and the serial collector grows the old generation for them and keeps it committed (and touched) until
 * a full collection that may never come. With {@code -XX:-ShrinkHeapInSteps} (the manifests set it) one full
 * collection shrinks the old generation to {@code -XX:MaxHeapFreeRatio} of what is live; measured with 10,000
 * Services and slices that did not opt in, 50 that did: 69 MiB of old generation (11 MiB live) down to 18 MiB, the
 * process from 155 to 116 MiB RSS.
 */
public final class HeapCompaction implements Runnable {
  private static final Logger LOG = LoggerFactory.getLogger(HeapCompaction.class);

  @Override
  public void run() {
    long before = committed();
    long t = System.nanoTime();
    System.gc();
    LOG.info("heap compacted after the first reconcile: {} MiB committed before, {} MiB after, in {} ms",
        before >> 20, committed() >> 20, (System.nanoTime() - t) / 1_000_000);
  }

  private static long committed() {
    MemoryUsage heap = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage();
    return heap.getCommitted();
  }
}
