package io.egressservice.testbed;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/** What {@link Cluster} to build: its nodes and how the agents run. {@link Cluster#standard()} is the usual start. */
public final class ClusterBuilder {
  /** How a node is shaped: how many uplinks (1 or 2) and pods. */
  public record NodeSpec(String name, int uplinks, int pods) {
    public NodeSpec {
      if (uplinks < 1 || uplinks > 2) {
        throw new IllegalArgumentException("a node has 1 or 2 uplinks, not " + uplinks);
      }
      if (pods < 0 || pods > 200) {
        throw new IllegalArgumentException("0 to 200 pods per node, not " + pods);
      }
    }
  }

  /** The builder's choices, frozen when the cluster starts. */
  record Spec(List<NodeSpec> nodes, List<String> agentArgs, Map<String, String> agentEnv, boolean agents,
      boolean apiProxy, boolean expiringWatches, int nodeRpFilter, Consumer<String> progress,
      Consumer<ApiServer> beforeAgents) {
    Spec {
      nodes = List.copyOf(nodes);
      agentArgs = List.copyOf(agentArgs);
      // insertion order is the agents' environment order, as before
      agentEnv = Collections.unmodifiableMap(new LinkedHashMap<>(agentEnv));
    }
  }

  private final List<NodeSpec> nodes = new ArrayList<>();
  private final List<String> agentArgs = new ArrayList<>();
  private final Map<String, String> agentEnv = new LinkedHashMap<>();
  private boolean agents = true;
  private boolean apiProxy;
  private boolean expiringWatches;
  private int nodeRpFilter = 2;
  private Consumer<String> progress = s -> {};
  private Consumer<ApiServer> beforeAgents = api -> {};

  ClusterBuilder() {}

  /** Adds node {@code name} (node-a, node-b, ... by convention; the n-th node gets index n). */
  public ClusterBuilder node(String name, int uplinks, int pods) {
    if (nodes.size() >= 9) {
      throw new IllegalArgumentException("at most 9 nodes");
    }
    nodes.add(new NodeSpec(name, uplinks, pods));
    return this;
  }

  /** Extra flags of every agent's {@code run} (e.g. {@code --rule-mode mark}). */
  public ClusterBuilder agentArgs(String... args) {
    agentArgs.addAll(List.of(args));
    return this;
  }

  /** An extra environment variable of every agent (e.g. {@code EGRESS_AGENT_LOG_LEVEL=debug}). */
  public ClusterBuilder agentEnv(String key, String value) {
    agentEnv.put(key, value);
    return this;
  }

  /** No agent processes (the network and the API only: for {@code apply --netns}, benchmarks, in-process agents). */
  public ClusterBuilder withoutAgents() {
    agents = false;
    return this;
  }

  /**
   * The agents reach the API server through an {@link ApiProxy} ({@code api().proxy()}), which a test can make
   * refuse or hang; the test's own client goes straight to the server.
   */
  public ClusterBuilder apiThroughProxy() {
    apiProxy = true;
    return this;
  }

  /**
   * The API server answers a watch resumed from a version older than its last {@code api().expireWatchHistory()}
   * with 410 Gone, as a real one does after a restart or a compaction (the plain mock resumes any watch silently).
   */
  public ClusterBuilder expiringWatches() {
    expiringWatches = true;
    return this;
  }

  /** The nodes' reverse-path filtering ({@code net.ipv4.conf.{all,default}.rp_filter}): 0, 1 (strict) or 2 (loose). */
  public ClusterBuilder nodeRpFilter(int value) {
    nodeRpFilter = value;
    return this;
  }

  /** Where the build says what it is doing (the demo prints it). */
  public ClusterBuilder progress(Consumer<String> sink) {
    progress = sink;
    return this;
  }

  /**
   * Objects the API holds before any agent starts (e.g. the agents' DaemonSet, which they must see present from their
   * start), written once the API server is up.
   */
  public ClusterBuilder beforeAgents(Consumer<ApiServer> step) {
    beforeAgents = beforeAgents.andThen(step);
    return this;
  }

  /** Builds everything and waits until every agent is ready; on failure removes what was built and rethrows. */
  public Cluster start() {
    if (nodes.isEmpty()) {
      throw new IllegalArgumentException("a cluster needs at least one node");
    }
    return Cluster.start(new Spec(nodes, agentArgs, agentEnv, agents, apiProxy, expiringWatches, nodeRpFilter, progress,
        beforeAgents));
  }
}
