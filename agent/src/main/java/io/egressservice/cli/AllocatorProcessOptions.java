package io.egressservice.cli;

import java.nio.file.Path;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * The options of a process that may run the allocator, which {@code run} (the DaemonSet, allocator on by default) and
 * {@code allocator} (the Deployment) share: the API, the probes' port, the Lease and this replica's identity in it,
 * the health probes of the hosts. One declaration, so the two commands cannot drift apart in names, defaults or
 * help. What each command does with an unset value stays its own: {@code allocator} requires {@code --pod-name},
 * {@code run} falls back to the node name.
 */
public final class AllocatorProcessOptions {
  @FromEnvironment
  @Option(names = "--kubeconfig",
      description = "Kubeconfig file; default: in-cluster configuration, then ~/.kube/config.")
  Path kubeconfig;

  @FromEnvironment
  @Option(names = "--metrics-port", defaultValue = "9464",
      description = "Port of /metrics, /healthz and /readyz (default ${DEFAULT-VALUE}; 0 picks a free port).")
  int metricsPort;

  @FromEnvironment("EGRESS_AGENT_POD_NAMESPACE")
  @Option(names = "--lease-namespace", defaultValue = "egress-service-agent",
      description = "Namespace of the allocator's leader-election Lease (default: the pod's namespace, else "
          + "${DEFAULT-VALUE}).")
  String leaseNamespace;

  @FromEnvironment
  @Option(names = "--pod-name",
      description = "Leader-election identity, unique per replica (the allocator Deployment sets it from "
          + "metadata.name): 'allocator' requires it; 'run' defaults to the node name.")
  String podName;

  @Mixin HostProbeOptions hostProbes;

  @Mixin ProbeKeyOptions probeKey;

  @Mixin LeaseOptions lease;

  @Mixin ApiWatchOptions apiWatch;
}
