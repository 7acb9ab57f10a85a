package io.egressservice.allocator;

import static io.egressservice.allocator.ProbeResult.HEALTHY;
import static io.egressservice.allocator.ProbeResult.NO_ANSWER;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.BiPredicate;
import org.junit.jupiter.api.Test;

/**
 * {@link HostHealth}'s self-suspicion, on probe timelines as {@link AgentProber} makes them: every node probed every
 * 500 ms, an answer arriving at once, an unanswered probe reported 1 s (the timeout) after it started.
 */
class HostHealthSelfSuspicionTest {
  private static final long MS = 1_000_000L;
  private static final long INTERVAL = 500 * MS;
  private static final long TIMEOUT = 1000 * MS;

  private final HostHealth health = new HostHealth(HostHealth.Settings.defaults());

  private record Result(long atNanos, String node, long seq, ProbeResult result) {}

  /**
   * Runs probes of {@code nodes} from {@code fromMs} to {@code toMs} (each node's probes at its own phase);
   * {@code lost(node, startMs)} says whether a probe started then goes unanswered. Returns every node that was
   * unreachable at some moment.
   */
  private Set<String> run(List<String> nodes, long fromMs, long toMs, BiPredicate<String, Long> lost,
      Map<String, Long> seqs) {
    PriorityQueue<Result> queue = new PriorityQueue<>((a, b) -> Long.compare(a.atNanos(), b.atNanos()));
    for (int i = 0; i < nodes.size(); i++) {
      String n = nodes.get(i);
      long phase = i * 170L;
      for (long t = fromMs + phase; t < toMs; t += INTERVAL / MS) {
        long seq = seqs.merge(n, 1L, Long::sum);
        boolean l = lost.test(n, t);
        queue.add(new Result(l ? t * MS + TIMEOUT : t * MS + MS, n, seq, l ? NO_ANSWER : HEALTHY));
      }
    }
    Set<String> everUnreachable = new TreeSet<>();
    nodes.forEach(n -> health.track(n, fromMs * MS));
    while (!queue.isEmpty()) {
      Result r = queue.poll();
      Set<String> before = health.unreachable();
      health.record(r.node(), r.seq(), r.result(), r.atNanos());
      everUnreachable.addAll(health.unreachable());
      if (!before.containsAll(health.unreachable())) {
        lastDrainNanos = r.atNanos();
      }
    }
    return everUnreachable;
  }

  /** When a node last became unreachable in the runs so far. */
  private long lastDrainNanos = -1;

  private Set<String> run(List<String> nodes, long fromMs, long toMs, BiPredicate<String, Long> lost) {
    return run(nodes, fromMs, toMs, lost, new HashMap<>());
  }

  @Test
  void mostNodesFailingAtOnceKeepsTheHosts() {
    // three nodes answer for 5 s, then none does for 10 s (the prober is cut off), then all do again
    Set<String> drained = run(List.of("a", "b", "c"), 0, 25_000, (n, t) -> t >= 5_000 && t < 15_000);
    assertThat(drained).as("nodes drained while every node went silent at once").isEmpty();
  }

  @Test
  void halfTheProbesLostOnEveryNodeForTwentySecondsDrainsNothing() {
    // 50 % loss on the prober's path to every node from 5 s to 25 s, 1000 different draws. Once the misses of two
    // nodes are in the suspicion holds for the rest of the loss; before that, in its first second or two, one node
    // can miss two probes in a row while both others happened to answer every probe (about 2 % of the draws): that
    // residue is bounded here.
    int drawsWithADrain = 0;
    for (int seed = 0; seed < 1000; seed++) {
      HostHealthSelfSuspicionTest t = new HostHealthSelfSuspicionTest();
      Random random = new Random(seed);
      Set<String> drained = t.run(List.of("a", "b", "c"), 0, 30_000,
          (n, at) -> at >= 5_000 && at < 25_000 && random.nextBoolean());
      if (!drained.isEmpty()) {
        drawsWithADrain++;
        assertThat(t.lastDrainNanos / MS).as("seed %d: ms at which a node was drained", seed).isLessThan(9_000);
      }
    }
    assertThat(drawsWithADrain).as("draws of 1000 where a node was drained").isLessThanOrEqualTo(40);
  }

  @Test
  void aSingleSilentHostAmongHealthyCandidatesStillFailsOver() {
    // the host a powers off at 5 s; the candidates b and c answer: a is drained as soon as two probes went unanswered
    Set<String> drained = run(List.of("a", "b", "c"), 0, 5_000 + 1_600, (n, t) -> n.equals("a") && t >= 5_000);
    assertThat(drained).containsExactly("a");
  }

  @Test
  void aTwoNodeClusterStillFailsOverWhenItsHostDies() {
    Set<String> drained = run(List.of("a", "b"), 0, 6_600, (n, t) -> n.equals("a") && t >= 5_000);
    assertThat(drained).containsExactly("a");
  }

  @Test
  void aOneNodeClusterStillDrainsItsSilentHost() {
    Set<String> drained = run(List.of("a"), 0, 6_600, (n, t) -> t >= 5_000);
    assertThat(drained).containsExactly("a");
  }

  @Test
  void twoSilentNodesOfTwoAreTakenForACutOffProber() {
    Set<String> drained = run(List.of("a", "b"), 0, 20_000, (n, t) -> t >= 5_000);
    assertThat(drained).isEmpty();
    assertThat(health.selfSuspected(20_000 * MS)).isTrue();
  }

  @Test
  void aNodeThatStaysSilentIsDrainedOnceTheOthersAnswerAgain() {
    Map<String, Long> seqs = new HashMap<>();
    // all silent from 5 s; b and c answer again from 12 s, a never does
    Set<String> drained = run(List.of("a", "b", "c"), 0, 30_000,
        (n, t) -> t >= 5_000 && (n.equals("a") || t < 12_000), seqs);
    assertThat(drained).containsExactly("a");
    assertThat(health.unreachable()).containsExactly("a");
    assertThat(health.selfSuspected(30_000 * MS)).isFalse();
  }

  @Test
  void theSuspicionSaysWhichNodesFail() {
    run(List.of("a", "b", "c", "d"), 0, 8_000, (n, t) -> t >= 5_000 && !n.equals("d"));
    HostHealth.Suspicion s = health.suspicion(8_000 * MS);
    assertThat(s.failing()).containsExactly("a", "b", "c");
    assertThat(s.judged()).isEqualTo(4);
    assertThat(s.suspected()).isTrue();
  }

  @Test
  void aNodeDrainedLongAgoDoesNotCountTowardsTheSuspicion() {
    // a dies at 2 s and is drained; b dies at 70 s while c answers: a is out of the judgment by then, b is drained
    Set<String> drained = run(List.of("a", "b", "c"), 0, 71_600,
        (n, t) -> n.equals("a") && t >= 2_000 || n.equals("b") && t >= 70_000);
    assertThat(drained).containsExactly("a", "b");
  }

  @Test
  void aSecondHostOfThreeLostSoonAfterTheFirstWaitsUntilTheFirstIsOutOfTheJudgment() {
    // a dies at 2 s (drained at about 3.5 s), b at 20 s: two silent of three, so b waits until a's drain is 60 s old
    Set<String> drained = run(List.of("a", "b", "c"), 0, 70_000,
        (n, t) -> n.equals("a") && t >= 2_000 || n.equals("b") && t >= 20_000);
    assertThat(drained).containsExactly("a", "b");
    assertThat(lastDrainNanos / MS).isBetween(63_000L, 64_500L);
  }
}
