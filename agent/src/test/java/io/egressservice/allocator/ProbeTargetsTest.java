package io.egressservice.allocator;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ProbeTargetsTest {
  private static NodeState node(String name, boolean ready, boolean cordoned) {
    return new NodeState(name, Map.of(), ready, cordoned, false, List.of(), List.of());
  }

  @Test
  void hostsUnreachableNodesAndAFewReadyCandidatesByNameAreProbed() {
    List<NodeState> nodes = List.of(node("n5", true, false), node("n1", true, false), node("n2", false, false),
        node("n3", true, true), node("n4", true, false), node("n6", true, false));
    Set<String> wanted = ProbeTargets.select(Set.of("n6"), Set.of("n2"), nodes, 2);
    // n2 unreachable, n6 the host; n1 and n4 the first two Ready, schedulable others (n3 is cordoned)
    assertThat(wanted).containsExactly("n1", "n2", "n4", "n6");
  }

  @Test
  void withNoCandidatesOnlyHostsAndUnreachableNodes() {
    assertThat(ProbeTargets.select(Set.of("a"), Set.of(), List.of(node("a", true, false), node("b", true, false)), 0))
        .containsExactly("a");
  }
}
