package io.egressservice.testbed.chaos;

/** What the {@link Nemesis} can do to the cluster. */
public enum Fault {
  /** SIGKILL of a node's agent, started again at once (kernel state kept). */
  AGENT_KILL,
  /** SIGSTOP of a node's agent for 1-10 s, then SIGCONT. */
  AGENT_STOP,
  /**
   * The API server refuses every connection for 5-60 s (its objects kept), as during a restart, and comes back
   * without its watch history: resumed watches are answered 410 Gone.
   */
  API_OUTAGE,
  /** The API server accepts and never answers for 5-60 s. */
  API_HANG,
  /** A node loses power (agent SIGKILLed, links down), then comes back. */
  POWER_OFF,
  /** SIGKILL of the allocator replica holding the Lease, started again after 1-4 s. */
  ALLOCATOR_LEADER_KILL,
  /** 50 % loss both ways between two nodes on the node network. */
  NODE_PAIR_LOSS,
  /** Someone deletes one thing of ours by hand: a rule, a SNAT element, the steering device. */
  DRIFT,
  /** Many EgressServices deleted and re-created one after another, as fast as the API server takes them. */
  RECREATE_BURST
}
