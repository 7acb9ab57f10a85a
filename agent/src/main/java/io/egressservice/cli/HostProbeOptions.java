package io.egressservice.cli;

import io.egressservice.allocator.HostHealth;
import io.egressservice.allocator.HostProbes;
import java.time.Duration;
import java.util.Optional;
import picocli.CommandLine.Option;

/** The allocator's health probes of the hosts' agents ({@link HostProbes}). */
public final class HostProbeOptions {
  @Option(names = "--host-probes", arity = "1", defaultValue = "${env:EGRESS_AGENT_HOST_PROBES:-true}",
      description = "Probe /healthz of the agents on the nodes that host services and drain a node whose agent does "
          + "not answer (default ${DEFAULT-VALUE}; false: only the Node's Ready condition counts).")
  boolean enabled;

  @Option(names = "--host-probe-port", defaultValue = "${env:EGRESS_AGENT_HOST_PROBE_PORT:-9464}",
      description = "The node agents' metrics port, probed on each host's InternalIP (default ${DEFAULT-VALUE}).")
  int port;

  @Option(names = "--host-probe-interval", defaultValue = "${env:EGRESS_AGENT_HOST_PROBE_INTERVAL:-500ms}",
      converter = RunCommand.DurationConverter.class,
      description = "How often each host is probed (default ${DEFAULT-VALUE}).")
  Duration interval;

  @Option(names = "--host-probe-timeout", defaultValue = "${env:EGRESS_AGENT_HOST_PROBE_TIMEOUT:-1s}",
      converter = RunCommand.DurationConverter.class,
      description = "Connect and answer of one probe (default ${DEFAULT-VALUE}).")
  Duration timeout;

  @Option(names = "--host-probe-failures", defaultValue = "${env:EGRESS_AGENT_HOST_PROBE_FAILURES:-2}",
      description = "Unanswered probes in a row that make a host unreachable (default ${DEFAULT-VALUE}).")
  int failures;

  @Option(names = "--host-agent-down-grace", defaultValue = "${env:EGRESS_AGENT_HOST_AGENT_DOWN_GRACE:-30s}",
      converter = RunCommand.DurationConverter.class,
      description = "How long a host whose node answers (connection refused) but whose agent is not healthy keeps "
          + "its services: an agent restart moves nothing (default ${DEFAULT-VALUE}).")
  Duration agentDownGrace;

  @Option(names = "--host-recover-after", defaultValue = "${env:EGRESS_AGENT_HOST_RECOVER_AFTER:-10s}",
      converter = RunCommand.DurationConverter.class,
      description = "How long an unreachable node must answer healthy before it may host again (default "
          + "${DEFAULT-VALUE}).")
  Duration recoverAfter;

  @Option(names = "--host-probe-candidates", defaultValue = "${env:EGRESS_AGENT_HOST_PROBE_CANDIDATES:-8}",
      description = "How many Ready nodes that host nothing are probed besides the hosts (by name): the allocator "
          + "knows their health before moving a service there, and when more than half of all the nodes it probes "
          + "(at least 2) fail at once it suspects its own path and drains nothing (default ${DEFAULT-VALUE}).")
  int candidates;

  @Option(names = "--host-probe-netns", defaultValue = "${env:EGRESS_AGENT_HOST_PROBE_NETNS}", hidden = true,
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
