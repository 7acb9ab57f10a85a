package io.egressservice.metrics;

import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

/**
 * The allocator's health probes' answers that did not prove who gives them ({@code AgentProber}), by the probed
 * address (one per node: the series are bounded by the nodes, whatever answers) and why.
 */
public final class ProbeMetrics {
  /** Why an answer did not count as its node's agent's (or counted only while learning). */
  public static final String NO_PROOF = "no_proof";
  public static final String BAD_PROOF = "bad_proof";
  public static final String OTHER_NODE = "other_node";
  public static final String NO_NODE = "no_node";
  /** No proof, taken by its node name: the node's agent has never proven an answer and the allocator learns. */
  public static final String NO_PROOF_LEARNING = "no_proof_learning";

  private final Counter unproven;

  public ProbeMetrics(PrometheusRegistry registry) {
    unproven = Counter.builder()
        .name("egress_service_agent_probe_unproven_answers_total")
        .help("Answers to the allocator's health probes that did not prove to be the probed node's agent's, by the"
            + " probed address and why: no_proof and bad_proof (with a probe key: counted as a refused connection),"
            + " other_node and no_node (the answer names another node or none), no_proof_learning (no proof, taken"
            + " by its node name: --host-probe-proofs=learn and the node's agent never proved an answer).")
        .labelNames("address", "reason")
        .register(registry);
  }

  public void unproven(String address, String reason) {
    unproven.labelValues(address, reason).inc();
  }

  public long unprovenCount(String address, String reason) {
    return (long) unproven.labelValues(address, reason).get();
  }
}
