package io.egressservice.cli;

import io.egressservice.allocator.AllocatorConfig;
import io.egressservice.allocator.AllocatorRunner;
import io.egressservice.buildinfo.BuildInfo;
import io.egressservice.health.HealthServer;
import io.egressservice.lifecycle.FailFast;
import io.egressservice.metrics.AllocatorMetrics;
import io.egressservice.metrics.RuntimeMetrics;
import io.egressservice.uninstall.Owner;
import io.egressservice.uninstall.OwnerWatch;
import io.egressservice.uninstall.StopVerdict;
import io.egressservice.uninstall.Uninstall;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.time.Duration;
import java.io.IOException;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;

/**
 * {@code allocator}: the cluster side alone, as the {@code egress-service-allocator} Deployment runs it. Its
 * replicas compete for one Lease; the holder writes {@code status.host} and the host labels. It touches no
 * kernel, so it needs no capability and no host network, and only it holds the write permissions.
 */
@Command(name = "allocator", mixinStandardHelpOptions = true,
    description = "Run only the allocator (leader-elected): choose each EgressService's status.host and label "
        + "the host node; /metrics, /healthz, /readyz.",
    footer = {"%nExamples:",
        "  egress-service-agent allocator                      (in the allocator Deployment)",
        "  egress-service-agent allocator --kubeconfig ~/.kube/config --lease-namespace egress-service-agent"})
public final class AllocatorCommand implements Callable<Integer> {
  private static final Logger LOG = LoggerFactory.getLogger(AllocatorCommand.class);
  /** The part of the Deployment's 30 s grace removing its labels, annotations and hosts may take. */
  private static final Duration UNINSTALL_BUDGET = Duration.ofSeconds(20);

  @picocli.CommandLine.Mixin AllocatorProcessOptions process;

  @picocli.CommandLine.Mixin UninstallOptions uninstall;
  @picocli.CommandLine.Mixin EgressServicePolicyOptions policy;

  @picocli.CommandLine.Mixin TrustedEndpointManagersOption trustedEndpointManagers;

  @Override
  public Integer call() throws Exception {
    if (process.podName == null || process.podName.isBlank()) {
      throw new Main.UserError("--pod-name (or EGRESS_AGENT_POD_NAME) is required: each replica needs its own "
          + "leader-election identity");
    }
    if (process.leaseNamespace == null || process.leaseNamespace.isBlank()) {
      throw new Main.UserError("--lease-namespace must not be empty");
    }
    AllocatorConfig config = process.lease.apply(AllocatorConfig.defaults())
        .withEndpointTrust(trustedEndpointManagers.toTrust())
        .withProbes(process.probeKey.apply(process.hostProbes.toProbes()));
    Optional<Owner> owner = uninstall.owner(Owner.Kind.DEPLOYMENT);
    config = policy.applyTo(config);
    io.egressservice.informers.SilentWatches watches = process.apiWatch.silentWatches();
    KubernetesClient client = KubeClients.create(process.kubeconfig, watches);
    Optional<OwnerWatch> ownerWatch = owner.map(o -> OwnerWatch.start(client, o));
    AllocatorMetrics metrics = new AllocatorMetrics();
    RuntimeMetrics.register(metrics.registry(), BuildInfo.current());
    io.egressservice.metrics.ApiWatchMetrics.register(metrics.registry(), watches);
    AllocatorRunner runner = AllocatorRunner.start(client, process.leaseNamespace, process.podName, config, metrics);
    runner.allocator().addListener(new FailoverRecorder(metrics.registry()));
    HealthServer health;
    try {
      // Alive while the process answers; ready once the caches are synced, so that a rollout waits for a
      // replica that could take over. A follower is ready too: readiness says nothing about the Lease.
      health = HealthServer.start(process.metricsPort, metrics.registry(),
          () -> new HealthServer.Probe(true, runner.isLeader() ? "allocator, leading" : "allocator, following"),
          () -> runner.allocator().synced()
              ? new HealthServer.Probe(true, "informers synced")
              : new HealthServer.Probe(false, "informers not synced yet"));
    } catch (IOException e) {
      runner.close();
      client.close();
      throw new Main.SystemError("cannot listen on port " + process.metricsPort + " for /metrics: " + e.getMessage(),
          e);
    }
    // The allocator's own threads are executors', which outlive a failed task; the probes' server is a thread of
    // its own, and without it the kubelet gets no answer.
    Optional<FailFast> failFast = FailFast.installed();
    failFast.ifPresent(f -> f.essential("the /metrics, /healthz and /readyz server", health::serving));
    CountDownLatch done = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      failFast.ifPresent(FailFast::stopping);
      StopVerdict verdict = Uninstall.verdict(ownerWatch);
      LOG.info("stopping: releasing the allocator's Lease");
      runner.close();
      if (verdict.uninstall()) {
        Uninstall.removeApiState(client, UNINSTALL_BUDGET);
      }
      ownerWatch.ifPresent(OwnerWatch::close);
      health.close();
      client.close();
      done.countDown();
    }, "shutdown"));
    LOG.info("egress-service-allocator {} running as {} (lease {}/{}, metrics on :{})",
        BuildInfo.current().describe(), process.podName, process.leaseNamespace, AllocatorConfig.DEFAULT_LEASE_NAME,
        health.port());
    done.await();
    return Main.EXIT_OK;
  }
}
