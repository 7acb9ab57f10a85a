package io.egressservice.metrics;

import io.egressservice.buildinfo.BuildInfo;
import io.prometheus.metrics.core.metrics.Info;
import io.prometheus.metrics.instrumentation.jvm.JvmMetrics;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

/**
 * What every process of the agent exposes besides its own metrics: {@code jvm_*} and {@code process_*}
 * (memory pools, GC, threads, CPU seconds, resident memory, open files) and
 * {@code egress_service_agent_build_info{version, commit, java_version}}.
 */
public final class RuntimeMetrics {
  private RuntimeMetrics() {}

  /** Registers them in {@code registry}; once per registry. */
  public static void register(PrometheusRegistry registry, BuildInfo build) {
    JvmMetrics.builder().register(registry);
    Info.builder()
        .name("egress_service_agent_build_info")
        .help("The agent's version, its git commit (\"\" when the build did not know it) and the Java runtime it"
            + " runs on; always 1.")
        .labelNames("version", "commit", "java_version")
        .register(registry)
        .addLabelValues(build.version(), build.commit().orElse(""),
            System.getProperty("java.runtime.version", "unknown"));
  }
}
