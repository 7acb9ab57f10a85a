package io.egressservice.probe;

import io.egressservice.model.PlanConfig;
import io.egressservice.model.RemoteEndpoints;
import io.egressservice.model.RuleMode;
import io.egressservice.model.SteeringConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * At the start of {@code run} and {@code apply}: tries every {@link Feature} the agent depends on (through a {@link
 * FeatureCheck}, the real one a scratch namespace), then either admits the configuration, changed where a fallback
 * exists, or refuses to start naming what is missing and the first versions that have it, as Cilium does for its
 * kernel probes. A missing feature is found here, in one message, rather than as a reconcile that fails forever.
 */
public final class KernelProbe {
  private static final Logger LOG = LoggerFactory.getLogger(KernelProbe.class);
  private static final String DOC = "docs/kernel-requirements.md";

  private KernelProbe() {}

  /** The configuration to run with, and the fallbacks taken (one WARN line each). */
  public record Admission(PlanConfig config, List<String> fallbacks) {
    public Admission {
      fallbacks = List.copyOf(fallbacks);
    }
  }

  /** The kernel lacks what the configuration needs: the process must not start (exit 2). */
  public static final class MissingFeatures extends RuntimeException {
    private static final long serialVersionUID = 1L;

    MissingFeatures(String message) {
      super(message);
    }
  }

  /** Tries every feature through {@code check}, timing the whole. */
  public static KernelFeatures probe(FeatureCheck check) {
    long start = System.nanoTime();
    Map<Feature, String> missing = new EnumMap<>(Feature.class);
    for (Feature f : Feature.values()) {
      check.missing(f).ifPresent(why -> missing.put(f, why));
    }
    return new KernelFeatures(check.kernelRelease(), missing, Optional.empty(),
        Duration.ofNanos(System.nanoTime() - start));
  }

  /**
   * What {@code config} becomes on a kernel with {@code found}: a fallback for each missing feature that has one,
   * {@link MissingFeatures} naming every missing one that the configuration needs and has none.
   */
  public static Admission admit(KernelFeatures found, PlanConfig config) {
    String linux = "Linux " + found.kernelRelease();
    List<String> fallbacks = new ArrayList<>();
    List<String> refusals = new ArrayList<>();
    PlanConfig admitted = config;
    for (Feature f : found.missingFeatures()) {
      String why = found.missing().get(f);
      String lacks = linux + " lacks " + f.description() + " (first in " + f.firstVersions() + "; here: " + why + ")";
      switch (f) {
        case VXLAN_GPE -> {
          if (admitted.steering().steers()) {
            SteeringConfig s = admitted.steering();
            admitted = admitted.withSteering(new SteeringConfig(RemoteEndpoints.REPORT, s.firstTable(), s.port(),
                s.noHost()));
            fallbacks.add(lacks + ": steering of remote endpoints is unavailable, running as with"
                + " --remote-endpoints=report (endpoints on nodes that are not the host leave their own node as before)");
          }
        }
        case CONNTRACK_FILTERED_DUMP -> fallbacks.add(lacks + ": flows are restarted after dumps of the whole"
            + " conntrack table, filtered here (slower on a busy node, same result)");
        case NFT_OBJECT_COMMENTS -> fallbacks.add(lacks + ": packets of services without a host are still dropped,"
            + " but the per-service drop counts cannot be attributed and read nothing");
        case NFT_INET_ROUTE_CHAIN -> {
          if (admitted.ruleMode() == RuleMode.MARK) {
            refusals.add(f.description() + ", needed by --rule-mode=mark (--rule-mode=source does without): first in "
                + f.firstVersions() + " (here: " + why + ")");
          }
        }
        default -> refusals.add(f.description() + ": first in " + f.firstVersions() + " (here: " + why + ")");
      }
    }
    if (!refusals.isEmpty()) {
      throw new MissingFeatures("the kernel (" + linux + ") lacks what the agent needs, so it does not start: "
          + String.join("; ", refusals) + ". See " + DOC + ".");
    }
    return new Admission(admitted, fallbacks);
  }

  /**
   * The startup hook with no probe but the scratch namespace ({@code checks}): where none can be made the agent
   * starts unprobed, saying so.
   *
   * @throws MissingFeatures when the kernel lacks what {@code config} needs
   */
  public static PlanConfig atStartup(PlanConfig config, Supplier<FeatureCheck> checks) {
    return atStartup(config, checks, () -> {
      throw new ScratchNamespace.Unavailable("no probe in the node's namespace", false, null);
    });
  }

  /**
   * The startup hook: probes in a scratch namespace ({@code scratch}) where one can be made (tests, {@code --netns},
   * a container with CAP_SYS_ADMIN), else in the node's own namespace ({@code inNode}: the DaemonSet, NET_ADMIN
   * only, with writes no packet can meet, see {@link NodeNamespaceCheck}), logs which, the fallbacks at WARN and a
   * summary with the time taken, and returns the configuration to run with. When neither can run the agent starts
   * unprobed, saying so; with no privileges at all it stays silent, as the dataplane's own check reports that first.
   *
   * @throws MissingFeatures when the kernel lacks what {@code config} needs
   */
  public static PlanConfig atStartup(PlanConfig config, Supplier<FeatureCheck> scratch,
      Supplier<FeatureCheck> inNode) {
    long start = System.nanoTime();
    KernelFeatures found;
    FeatureCheck check;
    String where;
    try {
      check = scratch.get();
      where = "in a scratch network namespace";
    } catch (ScratchNamespace.Unavailable noScratch) {
      if (!Privileges.netAdmin()) {
        LOG.debug("kernel features not probed: {}", noScratch.getMessage());
        return config;
      }
      try {
        check = inNode.get();
        where = "in the node's network namespace (no scratch one: " + noScratch.getMessage() + "), with nft check mode"
            + " and throwaway objects no packet can meet";
      } catch (ScratchNamespace.Unavailable noInNode) {
        LOG.warn("kernel features not probed ({}; {}): a missing one shows as failed reconciles instead; see {}",
            noScratch.getMessage(), noInNode.getMessage(), DOC);
        return config;
      }
    }
    try {
      found = probe(check);
    } finally {
      closeInBackground(check);
    }
    Duration took = Duration.ofNanos(System.nanoTime() - start);
    Admission admission = admit(found, config);
    admission.fallbacks().forEach(w -> LOG.warn("{}", w));
    LOG.info("kernel probe {}: Linux {}, {} of {} features present, {} ms", where, found.kernelRelease(),
        Feature.values().length - found.missing().size(), Feature.values().length, took.toMillis());
    return admission.config();
  }

  /**
   * Tearing the scratch namespace down (its thread, sockets and libnftables context; the kernel frees the namespace
   * itself) is nobody's wait: it runs beside the start rather than before it.
   */
  private static void closeInBackground(FeatureCheck check) {
    if (check instanceof AutoCloseable c) {
      Thread t = new Thread(() -> {
        try {
          c.close();
        } catch (Exception e) {
          LOG.debug("closing the kernel probe: {}", e.toString());
        }
      }, "kernel-probe-close");
      t.setDaemon(true);
      t.start();
    }
  }

  /** {@link #atStartup(PlanConfig, Supplier, Supplier)} with the real probes: scratch namespace, else the node's. */
  public static PlanConfig atStartup(PlanConfig config) {
    return atStartup(config, ScratchNamespace::open, NodeNamespaceCheck::open);
  }
}
