package io.egressservice.allocator;

/** What one health probe of a node's agent saw. */
public enum ProbeResult {
  /** {@code /healthz} answered 200. */
  HEALTHY,
  /**
   * The node's kernel answered but the agent did not say healthy: connection refused (nothing listens: the agent is
   * restarting), or an answer other than 200. The node is up, and so is the kernel state its agent left in place.
   */
  AGENT_DOWN,
  /** No answer within the timeout, or no route: the node is off, or cut off from here. */
  NO_ANSWER
}
