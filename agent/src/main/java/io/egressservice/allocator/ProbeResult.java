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
   * No handshake within the timeout, or no route: the node is off, or cut off from here. Also an answer that is not
   * from the node's agent (it names another node or none): it proves nothing about this node.
   */
  NO_ANSWER
}
