package io.egressservice.controller;

import io.egressservice.dataplane.ApplyReport;
import io.egressservice.dataplane.Change;
import io.egressservice.logging.LogKeys;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How a reconcile is logged: a reconcile in sync at debug only, one that changed something at info with its first
 * 50 changes, every refusal at warn (also when info is off). A change of one service's carries its {@code namespace}
 * and {@code service} keys ({@link LogKeys}).
 */
final class ReconcileLog {
  /** Under the agent's name: the reconcile log is what an operator greps the agent's lines for. */
  private static final Logger LOG = LoggerFactory.getLogger(NodeAgent.class);

  private ReconcileLog() {}

  /** One reconcile, started by {@code trigger}, that took {@code seconds} and did {@code report}. */
  static void log(String trigger, double seconds, ApplyReport report) {
    if (report.applied().isEmpty() && report.succeeded()) {
      if (LOG.isDebugEnabled()) { // the arguments are formatted before the call: only when the line is logged
        LOG.debug("reconcile ({}): in sync, {} ms", trigger, String.format("%.1f", seconds * 1000));
      }
      return;
    }
    if (!LOG.isInfoEnabled()) {
      report.failures().forEach(f -> LOG.warn("  refused by the kernel: {}", f));
      return;
    }
    LOG.info("reconcile ({}): {} change(s) in {} ms (kernel {} ms)", trigger, report.applied().size(),
        String.format("%.1f", seconds * 1000), String.format("%.1f", report.kernelNanos() / 1e6));
    report.applied().stream().limit(50).forEach(ReconcileLog::logChange);
    if (report.applied().size() > 50) {
      LOG.info("  ... and {} more", report.applied().size() - 50);
    }
    report.failures().forEach(f -> LOG.warn("  refused by the kernel: {}", f));
  }

  private static void logChange(Change c) {
    int slash = c.service().indexOf('/');
    // "namespace/name" for a service's change; "(in-cluster)", "(base)", "(steering)" for the node's own parts
    if (slash > 0 && !c.service().startsWith("(")) {
      LogKeys.service(LOG.atInfo(), c.service().substring(0, slash), c.service().substring(slash + 1))
          .log("  {} [{}]", c, c.service());
    } else {
      LOG.info("  {} [{}]", c, c.service());
    }
  }
}
