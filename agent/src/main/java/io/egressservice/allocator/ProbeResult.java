package io.egressservice.allocator;

/** What one health probe of a node's agent saw ({@link AgentProber#probeOnce} says how each is told). */
public enum ProbeResult {
  /** {@code /healthz} of the node's own agent answered 200. */
  HEALTHY,
  /**
   * The node's kernel answered but its agent did not say healthy: connection refused (nothing listens: the agent is
   * restarting), a completed handshake and then no complete answer in time (the agent is stopped, paused by a long
   * GC or starved of CPU: the kernel queues connections for its listening socket), or an answer other than 200. The
   * node is up, and so is the kernel state its agent left in place.
   */
  AGENT_DOWN,
  /**
   * No handshake within the timeout, or no route: the node is off, or cut off from here.
   */
  NO_ANSWER,
  /**
   * Something answered on the agent's port, but not provably this node's agent: no valid proof while the allocator
   * holds the probe key, or an answer naming another node or none. It counts as a refused connection does (the node
   * is up, its agent is not heard: {@link #AGENT_DOWN}'s grace), never as healthy, never as another node's answer;
   * and in the allocator's judgment of itself as a miss (most nodes unproven at once: its own key is likely wrong).
   */
  UNPROVEN
}
