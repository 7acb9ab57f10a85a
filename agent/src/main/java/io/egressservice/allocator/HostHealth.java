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
 *       the grace moves nothing). An answer that is not provably the node's agent's ({@link ProbeResult#UNPROVEN})
 *       counts as such a refusal: a forged answer can neither keep a node healthy nor drain it faster than a
 *       stopped agent would.</li>
 * </ul>
 * An unreachable node is eligible again once it has answered healthy continuously for {@code recoverAfter}
 * (flapping is damped; its services do not move back, as the allocator keeps a host while it qualifies).
 *
 * <p><b>The prober suspects itself first.</b> Silence of one node among answering ones says the node is gone; silence
 * of most nodes at once says more likely that the prober is cut off from them (its own node, its network path, a
 * policy), and draining them all would leave every service without a host. So, as the Kubernetes node lifecycle
 * controller stops evicting in a full disruption, no node becomes unreachable while {@linkplain #selfSuspected the
 * prober is suspected}: more than half of the nodes it judges, and at least {@link #MIN_SUSPECTED} of them, are
 * <em>failing</em> (unproven answers count as misses here: most nodes unproven at once says the allocator's own
 * probe key is likely wrong, not that their agents are all gone). The nodes it judges are the tracked nodes that are reachable, and those drained within the last
 * {@link #DRAINED_MEMORY} (without them, partial loss drains one node at a time: each drain shrinks the population
 * until a lone node is a majority of nothing; a node drained long ago says nothing about now). A node is failing when one of its probes went unanswered within {@code
 * suspicionWindow}, or when it has answered nothing for {@code answerGap} (a probe is hanging: its verdict is still
 * out, and without this the first node to reach {@code failures} would be drained before the others' probes time
 * out). While suspected, silent nodes keep their services and unanswered probes are still counted; once the
 * suspicion lifts, a node that is still silent is drained at its next result, one that answered meanwhile is not.
 *
 * <p>The threshold (more than half, at least 2) lets small clusters fail over: with one or two judged nodes a
 * single silent host is never a majority of at least 2, so it is drained as before; two silent nodes of two or three
 * are taken for a cut-off prober and keep their services (a real double failure there waits until the prober sees
 * some node answer). The caller makes the population meaningful by probing candidate hosts besides the hosts.
 *
 * <p>What it cannot see: at the onset of partial loss on every path, the first node to miss {@code failures} probes
 * in a row may do so while every other node happened to answer each probe; with three nodes and 50 % loss that is
 * about 2 % of onsets (HostHealthSelfSuspicionTest), with more probed nodes far less. After that the misses of
 * the others are in, and the suspicion holds for as long as the loss does.
 */
public final class HostHealth {
  /**
   * @param failures consecutive unanswered probes that make a node unreachable
   * @param agentDownGrace how long a node that answers but whose agent is not healthy still counts as reachable
   * @param recoverAfter how long an unreachable node must answer healthy before it may host again
   */
  public record Settings(int failures, Duration agentDownGrace, Duration recoverAfter, Duration suspicionWindow,
      Duration answerGap) {
    /** How long an unanswered probe counts a node as failing, for the self-suspicion. */
    public static final Duration DEFAULT_SUSPICION_WINDOW = Duration.ofSeconds(5);
    /** Silence after which a node counts as failing before its probe times out: 1.5 probe intervals of 500 ms. */
    public static final Duration DEFAULT_ANSWER_GAP = Duration.ofMillis(750);

    /**
     * @param suspicionWindow how long one unanswered probe counts its node as failing
     * @param answerGap how long a node may answer nothing before it counts as failing (more than the probe interval)
     */
    public Settings {
      if (failures < 1) {
        throw new IllegalArgumentException("failures must be at least 1, not " + failures);
      }
      Objects.requireNonNull(agentDownGrace);
      Objects.requireNonNull(recoverAfter);
      Objects.requireNonNull(suspicionWindow);
      Objects.requireNonNull(answerGap);
      if (suspicionWindow.isNegative() || answerGap.isNegative() || answerGap.isZero()) {
        throw new IllegalArgumentException("the suspicion window must not be negative and the answer gap positive");
      }
    }

    /** With the default suspicion window and answer gap. */
    public Settings(int failures, Duration agentDownGrace, Duration recoverAfter) {
      this(failures, agentDownGrace, recoverAfter, DEFAULT_SUSPICION_WINDOW, DEFAULT_ANSWER_GAP);
    }

    public static Settings defaults() {
      return new Settings(2, Duration.ofSeconds(30), Duration.ofSeconds(10));
    }
  }

  /**
   * How long a drained node still counts in the judgment (as failing while it stays silent). A second host of three
   * lost within this time after the first waits until it has passed.
   */
  public static final Duration DRAINED_MEMORY = Duration.ofSeconds(60);

  /** Fewest failing nodes that can make the prober suspect itself (one silent node is that node's failure). */
  public static final int MIN_SUSPECTED = 2;

  /**
   * The prober's judgment of itself at one moment.
   *
   * @param failing judged nodes that are failing (unanswered within the window, or silent for the answer gap)
   * @param judged tracked nodes that are reachable or were drained recently
   */
  public record Suspicion(Set<String> failing, int judged) {
    public Suspicion {
      failing = java.util.Collections.unmodifiableSortedSet(new TreeSet<>(failing));
    }

    public boolean suspected() {
      return failing.size() >= MIN_SUSPECTED && failing.size() * 2 > judged;
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
    long lastNoAnswerNanos;
    boolean everNoAnswer;
    long lastUnprovenNanos;
    boolean everUnproven;
    long unreachableSinceNanos;
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
      r.lastNoAnswerNanos = nowNanos;
      r.everNoAnswer = true;
      if (seq > r.lastAnswerSeq) {
        r.unansweredAfterAnswer.add(seq);
      }
    } else if (seq > r.lastAnswerSeq) {
      if (result == ProbeResult.UNPROVEN) {
        r.lastUnprovenNanos = nowNanos;
        r.everUnproven = true;
      }
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
    return evaluate(r, nowNanos, null);
  }

  /** Whether the prober suspects itself now (see the class comment): then no node becomes unreachable. */
  public boolean selfSuspected(long nowNanos) {
    return suspicion(nowNanos).suspected();
  }

  /** Which judged nodes are failing now, and how many are judged. */
  public Suspicion suspicion(long nowNanos) {
    Set<String> failing = new TreeSet<>();
    int judged = 0;
    for (Map.Entry<String, NodeRecord> e : nodes.entrySet()) {
      NodeRecord r = e.getValue();
      if (r.unreachable && nowNanos - r.unreachableSinceNanos > DRAINED_MEMORY.toNanos()) {
        continue;
      }
      judged++;
      boolean recentNoAnswer = r.everNoAnswer && nowNanos - r.lastNoAnswerNanos <= settings.suspicionWindow().toNanos();
      boolean recentUnproven = r.everUnproven
          && nowNanos - r.lastUnprovenNanos <= settings.suspicionWindow().toNanos();
      boolean quiet = nowNanos - r.lastAnswerNanos >= settings.answerGap().toNanos();
      if (recentNoAnswer || recentUnproven || quiet) {
        failing.add(e.getKey());
      }
    }
    return new Suspicion(failing, judged);
  }

  /** {@code suspicion} null: computed here when needed (only a node about to become unreachable asks). */
  private boolean evaluate(NodeRecord r, long nowNanos, Suspicion suspicion) {
    boolean before = r.unreachable;
    if (!r.unreachable) {
      boolean silent = r.unansweredAfterAnswer.size() >= settings.failures();
      boolean agentDownTooLong = !r.healthy && nowNanos - r.lastHealthyNanos >= settings.agentDownGrace().toNanos();
      r.unreachable = (silent || agentDownTooLong)
          && !(suspicion != null ? suspicion : suspicion(nowNanos)).suspected();
      if (r.unreachable) {
        r.unreachableSinceNanos = nowNanos;
      }
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
