package io.egressservice.logging;

import io.egressservice.kernel.linux.LinuxKernel;
import io.egressservice.dataplane.Dataplane;
import io.egressservice.dataplane.DataplaneException;
import io.egressservice.kernel.GenerationSource;
import java.lang.ref.Reference;
import java.util.Optional;
import org.slf4j.LoggerFactory;

/**
 * A child process for {@link JsonLogsTest}: the logging set-up of {@code Main.main} for a command that
 * touches the kernel, one line each through java.util.logging and System.Logger (a MessageFormat template with an
 * argument, as the netlink library writes them), then one observe of the current namespace whose nftables generation
 * is "unavailable", so the nft package logs a warning and, without CAP_NET_ADMIN, libnftables itself is called and
 * prints its raw "(you must be root)" line on C's stderr; JNA is loaded too (java.util.logging). Exits 0 whatever
 * happens.
 */
public final class JsonLogsProbe {
  private JsonLogsProbe() {}

  public static void main(String[] args) {
    ProcessLogging logging = ProcessLogging.install();
    logging.captureNativeStderr();
    java.util.logging.Logger.getLogger("io.egressservice.probe.jul").warning("through java.util.logging");
    System.getLogger("io.egressservice.probe.platform").log(System.Logger.Level.WARNING, "through {0}", "System.Logger");
    try (Dataplane dp = Dataplane.open(LinuxKernel.open(Optional.empty(),
        t -> GenerationSource.unavailable("switched off by the probe")), 5000, 201)) {
      dp.observe();
    } catch (DataplaneException e) {
      LoggerFactory.getLogger(JsonLogsProbe.class).error("observe failed: {}", e.getMessage());
    }
    Reference.reachabilityFence(logging);
  }
}
