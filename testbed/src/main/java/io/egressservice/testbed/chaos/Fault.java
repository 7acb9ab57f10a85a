package io.egressservice.testbed.chaos;

/** What the {@link Nemesis} can do to the cluster. */
public enum Fault {
  /** SIGKILL of a node's agent, started again at once (kernel state kept). */
  AGENT_KILL,
  /** SIGSTOP of a node's agent for 1-10 s, then SIGCONT. */
  AGENT_STOP,
  /**
   * The API server refuses every connection for 5-60 s (its objects kept), as during a restart, and comes back
   * without its watch history: resumed watches are answered 410 Gone. Churn goes on meanwhile (the test's own
   * client reaches the server directly), as it does during every API fault.
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
  RECREATE_BURST,
  /**
   * A node reboots: its agent SIGKILLed and its pods' links down, every piece of kernel state the agent owns flushed
   * (our nft table, rules of our protocol, routes of our protocol, the steering device), its agent started again on
   * the empty kernel while the API still names the node as host, its pods' links up once that agent is ready.
   */
  NODE_REBOOT,
  /**
   * A node's agent runs at a CPU limit (a CFS quota of {@link CpuLimit#MILLICORES} millicores) for 10-40 s of churn,
   * and until its kernel has caught up with the objects as they were at the fault's end.
   */
  AGENT_CPU_LIMIT,
  /** The agents' DaemonSet is rolled: each node's agent stopped (SIGTERM) and started again in turn, churn going on. */
  ROLLING_UPDATE,
  /**
   * The API server restarts (connections refused, watch history lost), and restarts again while the agents and the
   * allocator list afresh (the first watch answered 410 Gone after the first restart).
   */
  API_RESTART_IN_RELIST,
  /** Every request to the API server waits 1-5 s at the proxy, for 10-40 s of churn. */
  API_SLOW,
  /**
   * Every connection to the API server open at this moment stays open and delivers nothing, for good (the watches
   * and the shared connection alike), while new connections work; 10-40 s of churn follow. The agents must notice
   * and open new connections: their bound for it is {@link Soak#SILENT_WATCH_BOUND}.
   */
  API_SILENT,
  /**
   * The API server restarts (watch history lost) and then answers every watch request's handshake with HTTP 410
   * Gone (not a 410 event) for 5-30 s of churn: only a client that lists again ever watches again.
   */
  WATCH_410_HANDSHAKE
}
