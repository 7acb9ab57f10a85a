package io.egressservice.uninstall;

import io.egressservice.dataplane.ApplyReport;
import io.egressservice.dataplane.Dataplane;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.time.Duration;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A stopping process's part in an uninstall: the verdict (from its {@link OwnerWatch}, if it was told its workload),
 * then, only when uninstalling, the removal of what it owns: a node's kernel state ({@link Dataplane#cleanup()},
 * as the {@code cleanup} command) or the allocator's writes to the API ({@link AllocatorLeftovers}). Each step logs
 * what it did; none throws, so the rest of the shutdown always runs.
 */
public final class Uninstall {
  private static final Logger LOG = LoggerFactory.getLogger(Uninstall.class);
  /** How long the GET of the workload at SIGTERM may take before the watch's view counts. */
  public static final Duration GET_LIMIT = Duration.ofSeconds(2);

  private Uninstall() {}

  /** The verdict at SIGTERM; without a watch (no workload named), what the process owns always stays. */
  public static StopVerdict verdict(Optional<OwnerWatch> watch) {
    StopVerdict verdict;
    try {
      verdict = watch.map(w -> w.atStop(GET_LIMIT)).orElse(StopVerdict.keep("no workload named (--owner): what this "
          + "process owns stays"));
    } catch (RuntimeException e) {
      verdict = StopVerdict.keep("cannot tell whether its workload is deleted (" + e + "): what it owns stays");
    }
    LOG.info("stopping: {}", verdict.reason());
    return verdict;
  }

  /** Removes everything the agent owns on its node (the {@code cleanup} command's work), logging what and how long. */
  public static void removeKernelState(Dataplane dataplane) {
    try {
      ApplyReport report = dataplane.cleanup();
      if (report.succeeded()) {
        LOG.info("uninstall: removed {} owned kernel object(s) in {} in {} ms", report.applied().size(),
            dataplane.describe(), report.kernelNanos() / 1_000_000);
      } else {
        LOG.error("uninstall: removed {} owned kernel object(s) in {}; NOT removed: {} (run 'egress-service-agent "
            + "cleanup' on this node: docs/install.md, Uninstall)", report.applied().size(), dataplane.describe(),
            report.failures());
      }
    } catch (RuntimeException e) {
      LOG.error("uninstall: cannot remove the kernel state ({}): run 'egress-service-agent cleanup' on this node "
          + "(docs/install.md, Uninstall)", e.getMessage(), e);
    }
  }

  /** Removes the allocator's labels, annotations and hosts in at most {@code budget}, logging what and how long. */
  public static void removeApiState(KubernetesClient client, Duration budget) {
    long start = System.nanoTime();
    try {
      AllocatorLeftovers.Removed removed = AllocatorLeftovers.remove(client, budget);
      long ms = (System.nanoTime() - start) / 1_000_000;
      if (removed.failures().isEmpty()) {
        LOG.info("uninstall: removed {} in {} ms", removed, ms);
      } else {
        LOG.error("uninstall: removed {} in {} ms (docs/install.md, Uninstall: delete the workloads before their "
            + "RBAC)", removed, ms);
      }
    } catch (RuntimeException e) {
      LOG.error("uninstall: cannot remove the allocator's labels and annotations: {}", e.toString(), e);
    }
  }
}
