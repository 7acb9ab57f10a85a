package io.egressservice.cli;

import io.egressservice.allocator.AllocatorConfig;
import io.egressservice.allocator.AllocatorRunner;
import io.egressservice.buildinfo.BuildInfo;
import io.egressservice.controller.KubernetesEvents;
import io.egressservice.controller.NodeAgent;
import io.egressservice.dataplane.Dataplane;
import io.egressservice.dataplane.DataplaneException;
import io.egressservice.kernel.linux.LinuxKernel;
import io.egressservice.health.HealthListener;
import io.egressservice.health.HealthServer;
import io.egressservice.health.PortHolder;
import io.egressservice.health.ProbeIdentity;
import io.egressservice.informers.ClusterInformers;
import io.egressservice.lifecycle.FailFast;
import io.egressservice.lifecycle.Threads;
import io.egressservice.metrics.AgentMetrics;
import io.egressservice.metrics.AllocatorMetrics;
import io.egressservice.metrics.RuntimeMetrics;
import io.egressservice.netlink.NetlinkException;
import io.egressservice.kernel.NftException;
import io.egressservice.model.PlanConfig;
import io.egressservice.uninstall.Owner;
import io.egressservice.uninstall.OwnerWatch;
import io.egressservice.uninstall.StopVerdict;
import io.egressservice.uninstall.Uninstall;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.net.InetSocketAddress;
import java.time.Clock;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code run}: the DaemonSet process. */
@Command(name = "run", mixinStandardHelpOptions = true,
    description = "Run the node agent: informers, reconcile loop, drift repair, /metrics, /healthz, /readyz.",
    footer = {"%nExamples:",
        "  egress-service-agent run --node-name node-b        (in the DaemonSet: env EGRESS_AGENT_NODE_NAME)",
        "  egress-service-agent run --node-name node-b --kubeconfig ~/.kube/config --service-cidr 10.96.0.0/12"})
public final class RunCommand implements Callable<Integer> {
  private static final Logger LOG = LoggerFactory.getLogger(RunCommand.class);
  /** The longest wait between two attempts to bind the metrics port while another process holds it. */
  private static final Duration BIND_RETRY = Duration.ofSeconds(2);
  /** With the allocator on, the part of the DaemonSet's 30 s grace its labels and annotations may take. */
  private static final Duration UNINSTALL_API_BUDGET = Duration.ofSeconds(15);

  @FromEnvironment
  @Option(names = "--node-name", required = true,
      description = "This node's name (the DaemonSet sets it from spec.nodeName).")
  String nodeName;

  @FromEnvironment
  @Option(names = "--pod-uid",
      description = "This agent's pod UID (the DaemonSet sets it from metadata.uid): named, with the node, in every "
          + "answer of the metrics port, so the allocator can tell the agent's answers from another process's.")
  String podUid;

  @FromEnvironment
  @Option(names = "--resync", defaultValue = "60s", converter = DurationConverter.class,
      description = "Period of the full reconcile that repairs drift (e.g. 60s, 5m; default ${DEFAULT-VALUE}).")
  Duration resync;

  @FromEnvironment
  @Option(names = "--metrics-bind-address", defaultValue = "",
      description = "IP address /metrics, /healthz and /readyz listen on (default: every address of the node; the"
          + " DaemonSet sets the node's own address from status.hostIP, which the kubelet, Prometheus and the allocator"
          + " reach; never 127.0.0.1 in a cluster, which blinds all three).")
  String metricsBindAddress;

  @FromEnvironment
  @Option(names = "--allocator", arity = "1", defaultValue = "true",
      description = "Also choose status.host when leader (false where OVN-Kubernetes' cluster manager does it).")
  boolean allocator;

  @Mixin NetnsOption netns;

  @FromEnvironment
  @Option(names = "--netns-metrics-port", defaultValue = "9464", hidden = true,
      description = "Tests: with --netns, /metrics, /healthz and /readyz also listen inside that namespace on this "
          + "port (0: not), where a hostNetwork pod's port would be: on the node's addresses.")
  int netnsMetricsPort;

  @Mixin PlanOptions planOptions;

  @Mixin AllocatorProcessOptions process;

  @Mixin UninstallOptions uninstall;
  @Mixin EgressServicePolicyOptions policy;

  @Override
  public Integer call() throws Exception {
    if (nodeName == null || nodeName.isBlank()) {
      throw new Main.UserError("--node-name (or EGRESS_AGENT_NODE_NAME) is required");
    }
    PlanConfig config = planOptions.toConfig();
    ProbeIdentity whose;
    try {
      whose = new ProbeIdentity(nodeName, Optional.ofNullable(podUid).filter(u -> !u.isBlank()));
    } catch (IllegalArgumentException e) {
      throw new Main.UserError("--node-name, --pod-uid: " + e.getMessage());
    }
    // Checked before anything starts: a bad allocator flag is a user error, not a half-started agent.
    AllocatorConfig allocatorConfig = policy.applyTo(process.lease.apply(AllocatorConfig.defaults())
        .withProbes(process.probeKey.apply(process.hostProbes.toProbes())).withEndpointTrust(config.endpointTrust()));
    io.egressservice.health.ProbeKeys probeKeys = process.probeKey.keys();
    InetSocketAddress listen;
    try {
      listen = metricsBindAddress == null || metricsBindAddress.isBlank()
          ? new InetSocketAddress(process.metricsPort)
          : new InetSocketAddress(HealthServer.bindAddress(metricsBindAddress), process.metricsPort);
    } catch (IllegalArgumentException e) {
      throw new Main.UserError("--metrics-bind-address: " + e.getMessage());
    }
    Optional<Owner> owner = uninstall.owner(Owner.Kind.DAEMONSET);
    config = KernelAccess.admit(config); // kernel features probed: a fallback taken, or exit 2 naming what is missing
    LinuxKernel kernel = KernelAccess.openLinux(netns.value());
    Dataplane dataplane = KernelAccess.open(kernel, config.priority(), config.ruleProtocol());
    requirePrivileges(dataplane);
    KubernetesClient client;
    io.egressservice.informers.SilentWatches watches = process.apiWatch.silentWatches();
    try {
      client = KubeClients.create(process.kubeconfig, watches);
    } catch (RuntimeException e) {
      dataplane.close();
      throw e;
    }
    Optional<OwnerWatch> ownerWatch = owner.map(o -> OwnerWatch.start(client, o));
    AgentMetrics metrics = new AgentMetrics();
    RuntimeMetrics.register(metrics.registry(), BuildInfo.current());
    io.egressservice.metrics.ApiWatchMetrics.register(metrics.registry(), watches);
    metrics.noHostDrops(dataplane::noHostDroppedPackets);
    metrics.guardDrops(dataplane::guardDroppedPackets);
    // One set of informers for the node agent and the allocator: one watch per kind, one cache. Their
    // resync drives the allocator's periodic pass; the node agent has a resync timer of its own.
    ClusterInformers informers = ClusterInformers.create(client,
        allocator ? AllocatorConfig.defaults().resyncPeriod() : Duration.ZERO);
    policy.attach(informers, client);
    NodeAgent agent = new NodeAgent(informers, dataplane,
        new NodeAgent.Settings(nodeName, config, resync, Duration.ofSeconds(30)), metrics,
        new KubernetesEvents(client, nodeName, Clock.systemUTC()), Clock.systemUTC());
    // A port another process holds must not stop this node's egress: the agent reconciles without it and binds
    // once it is free (HealthListener); meanwhile the probes fail, which is what they should say.
    HealthListener health = HealthListener.start(
        "/metrics, /healthz and /readyz on " + describe(listen),
        () -> withHosting(HealthServer.start(listen, whose, probeKeys, metrics.registry(), agent::liveness,
            agent::readiness), agent),
        () -> PortHolder.system().describe(listen.getPort()), BIND_RETRY);
    Optional<HealthListener> nodeHealth = Optional.empty();
    if (netns.value().isPresent() && netnsMetricsPort > 0) {
      InetSocketAddress inside = new InetSocketAddress(netnsMetricsPort);
      nodeHealth = Optional.of(HealthListener.start(
          "/metrics, /healthz and /readyz on port " + netnsMetricsPort + " in netns " + netns.value().get(),
          () -> kernel.thread().call(() ->
              withHosting(HealthServer.start(inside, whose, probeKeys, metrics.registry(), agent::liveness,
                  agent::readiness),
                  agent)),
          () -> kernel.thread().call(() -> PortHolder.system().describe(netnsMetricsPort)), BIND_RETRY));
    }
    Optional<HealthListener> inNetns = nodeHealth;
    agent.afterFirstReconcile(new io.egressservice.lifecycle.HeapCompaction());
    agent.start();
    // The node's view going stale past the readiness bound, and catching up, told on its Node.
    io.egressservice.informers.StaleViewEvents staleView = new io.egressservice.informers.StaleViewEvents(client,
        () -> informers.connectivity().downAges(NodeAgent.Settings.WATCH_DOWN_GRACE),
        io.egressservice.informers.StaleViewEvents.Target.node(nodeName, "egress-service-agent",
            () -> Optional.ofNullable(informers.nodes().getStore().getByKey(nodeName))
                .map(n -> n.getMetadata().getUid())),
        () -> true,
        io.egressservice.informers.StaleViewEvents.DEFAULT_SPACING, Clock.systemUTC()).start();
    Optional<AllocatorRunner> allocatorRunner = Optional.empty();
    if (allocator) {
      String identity = Optional.ofNullable(process.podName).filter(n -> !n.isBlank()).orElse(nodeName);
      allocatorRunner = Optional.of(AllocatorRunner.start(client, informers, process.leaseNamespace, identity,
          allocatorConfig,
          new AllocatorMetrics(metrics.registry())));
      allocatorRunner.get().allocator().addListener(new FailoverRecorder(metrics.registry()));
    }
    Optional<AllocatorRunner> runner = allocatorRunner;
    Optional<FailFast> failFast = FailFast.installed();
    failFast.ifPresent(f -> watchEssentials(f, health, inNetns));
    CountDownLatch done = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      failFast.ifPresent(FailFast::stopping);
      // The kernel state stays for the next agent (a restart must not cut egress), unless the DaemonSet is deleted.
      StopVerdict verdict = Uninstall.verdict(ownerWatch);
      runner.ifPresent(AllocatorRunner::close);
      staleView.close();
      agent.close();
      if (verdict.uninstall()) {
        runner.ifPresent(r -> Uninstall.removeApiState(client, UNINSTALL_API_BUDGET));
        Uninstall.removeKernelState(dataplane);
      }
      ownerWatch.ifPresent(OwnerWatch::close);
      informers.close();
      health.close();
      inNetns.ifPresent(HealthListener::close);
      dataplane.close();
      client.close();
      done.countDown();
    }, "shutdown"));
    LOG.info("egress-service-agent running on node {} in {} (priority {}, protocol {}, resync {}, metrics on {}, allocator {})",
        nodeName, dataplane.describe(), config.priority(), config.ruleProtocol(), resync,
        health.server().map(h -> (listen.getAddress().isAnyLocalAddress() ? "*"
            : listen.getAddress().getHostAddress()) + ":" + h.port()).orElse(describe(listen) + " (not yet: see the warning above)"),
        allocator ? "on (lease " + process.leaseNamespace + "/" + AllocatorConfig.DEFAULT_LEASE_NAME + ")" : "off");
    done.await();
    return Main.EXIT_OK;
  }

  /**
   * The threads without which the agent is up but useless: the reconcile worker (dead, it programs nothing and
   * the pod stays unready for good) and the probes' server (dead, nothing answers the kubelet). One that ends
   * ends the process; a stuck one is /healthz's to report.
   */
  private void watchEssentials(FailFast failFast, HealthListener health, Optional<HealthListener> inNetns) {
    // NodeAgent's worker thread: its liveness() says "stuck or dead" in one, and only a dead one is ours to end.
    String worker = "reconcile-" + nodeName;
    Threads.named(worker).ifPresentOrElse(t -> failFast.essential("the reconcile loop (thread " + worker + ")", t),
        () -> LOG.warn("no thread {}: a reconcile loop that ends is seen by /healthz only", worker));
    failFast.essential("the /metrics, /healthz and /readyz server", health::serving);
    inNetns.ifPresent(h -> failFast.essential("the /metrics, /healthz and /readyz server in the netns", h::serving));
  }

  private static String describe(InetSocketAddress listen) {
    return (listen.getAddress().isAnyLocalAddress() ? "*" : listen.getAddress().getHostAddress()) + ":"
        + listen.getPort();
  }

  /**
   * Reads the owned state once before anything starts: without CAP_NET_ADMIN every reconcile would
   * fail the same way and be retried forever, so that is exit 2 now, with the reason. Other failures
   * (the kernel may be busy) are left to the reconcile loop's retries.
   */
  private static void requirePrivileges(Dataplane dataplane) {
    try {
      dataplane.observe();
    } catch (DataplaneException e) {
      if (permissionDenied(e)) {
        dataplane.close();
        throw new Main.SystemError(e.getMessage(), e);
      }
      LOG.warn("cannot read the kernel state yet (the reconcile loop retries): {}", e.getMessage());
    }
  }

  private static boolean permissionDenied(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof NftException.PermissionDenied || t instanceof NetlinkException.PermissionDenied) {
        return true;
      }
    }
    return false;
  }

  /** "60s", "5m", "1h", "250ms" or ISO-8601 "PT60S". */
  public static final class DurationConverter implements picocli.CommandLine.ITypeConverter<Duration> {
    @Override
    public Duration convert(String value) {
      String v = value.trim();
      try {
        if (v.startsWith("P") || v.startsWith("p")) {
          return Duration.parse(v);
        }
        if (v.endsWith("ms")) {
          return Duration.ofMillis(Long.parseLong(v.substring(0, v.length() - 2)));
        }
        long n = Long.parseLong(v.substring(0, v.length() - 1));
        return switch (v.charAt(v.length() - 1)) {
          case 's' -> Duration.ofSeconds(n);
          case 'm' -> Duration.ofMinutes(n);
          case 'h' -> Duration.ofHours(n);
          default -> throw new IllegalArgumentException();
        };
      } catch (RuntimeException e) {
        throw new picocli.CommandLine.TypeConversionException(
            "'" + value + "' is not a duration (e.g. 60s, 5m, 1h, 250ms)");
      }
    }
  }

  /** The probe port also says which services this node's kernel receives for ({@code /hosting}: planned moves). */
  private static HealthServer withHosting(HealthServer server, NodeAgent agent) {
    server.serveJson(io.egressservice.health.Hosting.PATH, () -> agent.hosting().toJson());
    return server;
  }
}
