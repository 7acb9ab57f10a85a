package io.egressservice.metrics;

import io.egressservice.buildinfo.BuildInfo;
import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.core.metrics.Info;
import io.prometheus.metrics.instrumentation.jvm.JvmBufferPoolMetrics;
import io.prometheus.metrics.instrumentation.jvm.JvmClassLoadingMetrics;
import io.prometheus.metrics.instrumentation.jvm.JvmCompilationMetrics;
import io.prometheus.metrics.instrumentation.jvm.JvmGarbageCollectorMetrics;
import io.prometheus.metrics.instrumentation.jvm.JvmMemoryMetrics;
import io.prometheus.metrics.instrumentation.jvm.JvmRuntimeInfoMetric;
import io.prometheus.metrics.instrumentation.jvm.JvmThreadsMetrics;
import io.prometheus.metrics.instrumentation.jvm.ProcessMetrics;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.Unit;
import java.lang.management.ManagementFactory;

/**
 * What every process of the agent exposes besides its own metrics: {@code jvm_*} and {@code process_*}
 * (memory pools, GC, threads, CPU seconds, resident memory, open files) and
 * {@code egress_service_agent_build_info{version, commit, java_version}}, and {@code jvm_allocated_bytes_total}:
 * the heap bytes all threads allocated since the start, live and ended ones (what a change costs the garbage
 * collector, read before and after it: bench/scale.sh), and the C heap ({@link NativeHeapMetrics}).
 *
 * <p>All of the library's JVM metrics but two: {@code JvmNativeMemoryMetrics} exports nothing without
 * {@code -XX:NativeMemoryTracking} (which the pods do not set) and still starts the platform MBean server, and
 * {@code JvmMemoryPoolAllocationMetrics} listens to GC notifications through JMX. Together they loaded about 560
 * more classes in a measurement (1,831 against 1,270 with the rest) in a process whose memory is tuned to the MiB.
 */
public final class RuntimeMetrics {
  private RuntimeMetrics() {}

  /** Registers them in {@code registry}; once per registry. */
  public static void register(PrometheusRegistry registry, BuildInfo build) {
    JvmMemoryMetrics.builder().register(registry);
    JvmGarbageCollectorMetrics.builder().register(registry);
    JvmThreadsMetrics.builder().register(registry);
    JvmClassLoadingMetrics.builder().register(registry);
    JvmBufferPoolMetrics.builder().register(registry);
    JvmCompilationMetrics.builder().register(registry);
    JvmRuntimeInfoMetric.builder().register(registry);
    ProcessMetrics.builder().register(registry);
    registerAllocatedBytes(registry);
    NativeHeapMetrics.register(registry);
    Info.builder()
        .name("egress_service_agent_build_info")
        .help("The agent's version, its git commit (\"\" when the build did not know it) and the Java runtime it"
            + " runs on; always 1.")
        .labelNames("version", "commit", "java_version")
        .register(registry)
        .addLabelValues(build.version(), build.commit().orElse(""),
            System.getProperty("java.runtime.version", "unknown"));
  }

  /**
   * From HotSpot's thread allocation counters (JDK 14+), which are on by default; absent where the runtime cannot
   * tell (the bean says -1), rather than a counter stuck at a wrong value.
   */
  private static void registerAllocatedBytes(PrometheusRegistry registry) {
    if (!(ManagementFactory.getThreadMXBean() instanceof com.sun.management.ThreadMXBean threads)
        || !threads.isThreadAllocatedMemorySupported() || !threads.isThreadAllocatedMemoryEnabled()) {
      return;
    }
    CounterWithCallback.builder()
        .name("jvm_allocated_bytes_total")
        .help("Bytes allocated on the heap by all threads of this JVM since it started, including threads that ended")
        .unit(Unit.BYTES)
        .callback(cb -> cb.call(Math.max(0, threads.getTotalThreadAllocatedBytes())))
        .register(registry);
  }
}
