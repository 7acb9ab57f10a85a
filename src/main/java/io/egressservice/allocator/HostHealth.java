package io.egressservice.allocator;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;

/**
 * Which nodes' agents are unreachable, from the results of health probes. Pure: the caller passes probe results
 * with their sequence numbers (probes of one node may overlap and finish out of order) and the monotonic time.
 *
 * <p>A node becomes <em>unreachable</em> (drained: it may host nothing) when
 * <ul>
 *   <li>{@code failures} probes in a row, by start order, got no answer at all (a powered-off or cut-off node: a
 *       SYN that times out), or</li>
 *   <li>its agent has not been healthy for {@code agentDownGrace} although the node answers (connection refused:
 *       the agent is down but the node is up; its SNAT stays in the kernel and keeps working, so a restart within
 *       the grace moves nothing).</li>
 * </ul>
 * An unreachable node is eligible again once it has answered healthy continuously for {@code recoverAfter}
 * (flapping is damped; its services do not move back, as the allocator keeps a host while it qualifies).
 */
public final class HostHealth {
  /**
   * @param failures consecutive unanswered probes that make a node unreachable
   * @param agentDownGrace how long a node that answers but whose agent is not healthy still counts as reachable
   * @param recoverAfter how long an unreachable node must answer healthy before it may host again
   */
  public record Settings(int failures, Duration agentDownGrace, Duration recoverAfter) {
    public Settings {
      if (failures < 1) {
        throw new IllegalArgumentException("failures must be at least 1, not " + failures);
      }
      Objects.requireNonNull(agentDownGrace);
      Objects.requireNonNull(recoverAfter);
    }

    public static Settings defaults() {
      return new Settings(2, Duration.ofSeconds(30), Duration.ofSeconds(10));
    }
  }

  private static final class NodeRecord {
    long lastAnswerSeq = -1;
    long lastAnswerNanos;
    long newestSeq = -1;
    final Set<Long> unansweredAfterAnswer = new TreeSet<>();
    long healthySinceNanos;
    boolean healthy = true;
    long lastHealthyNanos;
    boolean unreachable;
  }

  private final Settings settings;
  private final Map<String, NodeRecord> nodes = new HashMap<>();

  public HostHealth(Settings settings) {
    this.settings = Objects.requireNonNull(settings);
  }

  /** Starts tracking a node (as healthy now) if it is not tracked yet. */
  public void track(String node, long nowNanos) {
    nodes.computeIfAbsent(node, n -> {
      NodeRecord r = new NodeRecord();
      r.healthySinceNanos = nowNanos;
      r.lastHealthyNanos = nowNanos;
      r.lastAnswerNanos = nowNanos;
      return r;
    });
  }

  /** Forgets nodes outside {@code keep} that are not unreachable (an unreachable node is kept to see it return). */
  public void retain(Set<String> keep) {
    nodes.entrySet().removeIf(e -> !keep.contains(e.getKey()) && !e.getValue().unreachable);
  }

  /** The nodes tracked now (what to probe). */
  public Set<String> tracked() {
    return Set.copyOf(nodes.keySet());
  }

  /**
   * Records the result of probe {@code seq} of {@code node} (sequence numbers grow per node in start order).
   *
   * @return true when the node's eligibility changed
   */
  public boolean record(String node, long seq, ProbeResult result, long nowNanos) {
    track(node, nowNanos);
    NodeRecord r = nodes.get(node);
    r.newestSeq = Math.max(r.newestSeq, seq);
    if (result == ProbeResult.NO_ANSWER) {
      if (seq > r.lastAnswerSeq) {
        r.unansweredAfterAnswer.add(seq);
      }
    } else if (seq > r.lastAnswerSeq) {
      r.lastAnswerSeq = seq;
      r.lastAnswerNanos = nowNanos;
      r.unansweredAfterAnswer.removeIf(s -> s < seq);
    }
    if (result == ProbeResult.HEALTHY) {
      if (!r.healthy) {
        r.healthy = true;
        r.healthySinceNanos = nowNanos;
      }
      r.lastHealthyNanos = nowNanos;
    } else {
      r.healthy = false;
    }
    return evaluate(r, nowNanos);
  }

  /** Re-evaluates time-based rules (grace, recovery) without a new result; true when anything changed. */
  public boolean tick(long nowNanos) {
    boolean changed = false;
    for (NodeRecord r : nodes.values()) {
      changed |= evaluate(r, nowNanos);
    }
    return changed;
  }

  private boolean evaluate(NodeRecord r, long nowNanos) {
    boolean before = r.unreachable;
    if (!r.unreachable) {
      boolean silent = r.unansweredAfterAnswer.size() >= settings.failures();
      boolean agentDownTooLong = !r.healthy && nowNanos - r.lastHealthyNanos >= settings.agentDownGrace().toNanos();
      r.unreachable = silent || agentDownTooLong;
    } else {
      r.unreachable = !(r.healthy && r.unansweredAfterAnswer.isEmpty()
          && nowNanos - r.healthySinceNanos >= settings.recoverAfter().toNanos());
    }
    return before != r.unreachable;
  }

  /** The nodes that may not host now, sorted. */
  public Set<String> unreachable() {
    Set<String> out = new TreeSet<>();
    nodes.forEach((n, r) -> {
      if (r.unreachable) {
        out.add(n);
      }
    });
    return out;
  }

  /** When the node last answered a probe (or began to be tracked): the latest it can have gone away. */
  public long lastAnswerNanos(String node) {
    NodeRecord r = nodes.get(node);
    return r == null ? 0 : r.lastAnswerNanos;
  }

  public boolean isUnreachable(String node) {
    NodeRecord r = nodes.get(node);
    return r != null && r.unreachable;
  }
}
