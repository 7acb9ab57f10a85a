package io.egressservice.probe;

import io.egressservice.model.PlanConfig;
import io.egressservice.model.RuleMode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.Map;
import java.util.Optional;

/**
 * Run by {@link NodeNamespaceCheckKernelTest} in a child JVM with reduced capabilities: the agent's startup probe,
 * printing what it could do, which path it took and what it found.
 */
public final class StartupProbeMain {
  private StartupProbeMain() {}

  public static void main(String[] args) throws Exception {
    long caps = 0;
    for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
      if (line.startsWith("CapEff:")) {
        caps = Long.parseUnsignedLong(line.substring(7).trim(), 16);
      }
    }
    System.out.println("capabilities=" + String.format("%016x", caps) + (caps == 1L << 12 ? " (net_admin only)" : ""));
    try (ScratchNamespace s = ScratchNamespace.open()) {
      System.out.println("scratch=made");
    } catch (ScratchNamespace.Unavailable e) {
      System.out.println("scratch=unavailable permission=" + e.permission());
    }
    String[] path = {"none"};
    Map<Feature, String> missing = new EnumMap<>(Feature.class);
    PlanConfig config = PlanConfig.defaults().withRuleMode(RuleMode.MARK, PlanConfig.defaults().markMask());
    long start = System.nanoTime();
    PlanConfig admitted = KernelProbe.atStartup(config, () -> {
      path[0] = "scratch";
      return ScratchNamespace.open();
    }, () -> {
      path[0] = "node";
      NodeNamespaceCheck check = NodeNamespaceCheck.open();
      return new Recording(check, missing);
    });
    long millis = (System.nanoTime() - start) / 1_000_000;
    System.out.println("path=" + path[0] + " missing=" + missing + " admitted="
        + (admitted.equals(config) ? "unchanged" : admitted) + " ms=" + millis);
    // A second start in this JVM: what the probe itself costs once JNA, libnftables and the classes are loaded
    // (at the agent's start the dataplane loads them anyway).
    start = System.nanoTime();
    KernelProbe.atStartup(config, ScratchNamespace::open, NodeNamespaceCheck::open);
    System.out.println("warm ms=" + (System.nanoTime() - start) / 1_000_000);
  }

  /** Passes the real answers through, noting the missing ones. */
  private record Recording(NodeNamespaceCheck check, Map<Feature, String> missing)
      implements FeatureCheck, AutoCloseable {
    @Override
    public Optional<String> missing(Feature feature) {
      Optional<String> why = check.missing(feature);
      why.ifPresent(w -> missing.put(feature, w));
      return why;
    }

    @Override
    public String kernelRelease() {
      return check.kernelRelease();
    }

    @Override
    public void close() {
      check.close();
    }
  }
}
