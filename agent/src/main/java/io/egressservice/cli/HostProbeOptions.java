package io.egressservice.cli;

import io.egressservice.allocator.HostHealth;
import io.egressservice.allocator.HostProbes;
import java.time.Duration;
import java.util.Optional;
import picocli.CommandLine.Option;

/** The allocator's health probes of the hosts' agents ({@link HostProbes}). */
public final class HostProbeOptions {
  @FromEnvironment
  @Option(names = "--host-probes", arity = "1", defaultValue = "true",
      description = "Probe /healthz of the agents on the nodes that host services and drain a node whose agent does "
          + "not answer (default ${DEFAULT-VALUE}; false: only the Node's Ready condition counts).")
  boolean enabled;

  @FromEnvironment
  @Option(names = "--host-probe-port", defaultValue = "9464",
      description = "The node agents' metrics port, probed on each host's InternalIP (default ${DEFAULT-VALUE}).")
  int port;

  @FromEnvironment
  @Option(names = "--host-probe-interval", defaultValue = "500ms",
      converter = RunCommand.DurationConverter.class,
      description = "How often each host is probed (default ${DEFAULT-VALUE}).")
  Duration interval;

  @FromEnvironment
  @Option(names = "--host-probe-timeout", defaultValue = "1s",
      converter = RunCommand.DurationConverter.class,
      description = "Connect and answer of one probe (default ${DEFAULT-VALUE}).")
  Duration timeout;

  @FromEnvironment
  @Option(names = "--host-probe-failures", defaultValue = "2",
      description = "Unanswered probes in a row that make a host unreachable (default ${DEFAULT-VALUE}).")
  int failures;

  @FromEnvironment
  @Option(names = "--host-agent-down-grace", defaultValue = "30s",
      converter = RunCommand.DurationConverter.class,
      description = "How long a host whose node answers (connection refused) but whose agent is not healthy keeps "
          + "its services: an agent restart moves nothing (default ${DEFAULT-VALUE}).")
  Duration agentDownGrace;

  @FromEnvironment
  @Option(names = "--host-recover-after", defaultValue = "10s",
      converter = RunCommand.DurationConverter.class,
      description = "How long an unreachable node must answer healthy before it may host again (default "
          + "${DEFAULT-VALUE}).")
  Duration recoverAfter;

  @FromEnvironment
  @Option(names = "--host-probe-candidates", defaultValue = "8",
      description = "How many Ready nodes that host nothing are probed besides the hosts (by name): the allocator "
          + "knows their health before moving a service there, and when more than half of all the nodes it probes "
          + "(at least 2) fail at once it suspects its own path and drains nothing (default ${DEFAULT-VALUE}).")
  int candidates;

  @FromEnvironment
  @Option(names = "--host-probe-netns", hidden = true,
      description = "Tests: open the probe sockets in this network namespace.")
  String netns;

  HostProbes toProbes() {
    try {
      // A node that answers nothing for 1.5 intervals has a probe hanging: it counts as failing in the judgment.
      return new HostProbes(enabled, port, interval, timeout, 32,
          Optional.ofNullable(netns).filter(n -> !n.isBlank()),
          new HostHealth.Settings(failures, agentDownGrace, recoverAfter, HostHealth.Settings.DEFAULT_SUSPICION_WINDOW,
              interval.multipliedBy(3).dividedBy(2)), candidates);
    } catch (IllegalArgumentException e) {
      throw new Main.UserError(e.getMessage());
    }
  }
}
