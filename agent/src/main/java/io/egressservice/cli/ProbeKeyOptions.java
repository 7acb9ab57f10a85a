package io.egressservice.cli;

import io.egressservice.allocator.HostProbes;
import io.egressservice.health.ProbeKeys;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Optional;
import picocli.CommandLine.Option;

/**
 * The probe key ({@link ProbeKeys}): the node agent proves its health answers with it, the allocator checks them.
 * Shared by {@code run} and {@code allocator} ({@link AllocatorProcessOptions}).
 */
public final class ProbeKeyOptions {
  @FromEnvironment
  @Option(names = "--probe-key-file",
      description = "File holding the probe key (the Secret egress-service-agent-probe-key's 'key', mounted): the agent "
          + "proves its answers to the allocator's probes with it, the allocator accepts proofs under it or under "
          + "'previous' in the same directory. Read again when it changes. Unset or missing: answers are not proved "
          + "(docs/operate.md, \"Probe proofs\").")
  Path keyFile;

  @FromEnvironment
  @Option(names = "--host-probe-proofs", defaultValue = "require",
      description = "With a probe key, what an answer without a valid proof is worth: require (counted as a refused "
          + "connection) or learn (taken by the node it names until that node's agent has proven one; for upgrades "
          + "from agents without proofs). Default ${DEFAULT-VALUE}.")
  String proofs;

  /** The key the options name (none when unset). */
  ProbeKeys keys() {
    return Optional.ofNullable(keyFile).filter(p -> !p.toString().isBlank())
        .map(p -> ProbeKeys.fromFile(p, ProbeKeys.DEFAULT_RECHECK)).orElseGet(ProbeKeys::none);
  }

  /** {@code probes} proved under the key as {@code --host-probe-proofs} says. */
  HostProbes apply(HostProbes probes) {
    HostProbes.ProofMode mode;
    try {
      mode = HostProbes.ProofMode.valueOf(String.valueOf(proofs).trim().toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new Main.UserError("--host-probe-proofs must be require or learn, not '" + proofs + "'");
    }
    return probes.withKeys(keys(), mode);
  }
}
