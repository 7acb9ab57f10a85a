package io.egressservice.nft;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.egressservice.ip.IpPrefix;
import io.egressservice.nft.MarkNftables.MarkElement;
import io.egressservice.nft.MarkNftables.MarkPlan;
import io.egressservice.nft.MarkNftables.MarkState;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The reply chain of mark mode ({@code mark_reply}, gated by the set
 * {@code mark_reply_ifaces} of strict-rp_filter uplinks) exists exactly while some uplink needs it,
 * and the transitions keep nft's references valid (a set or map is never deleted before the chain using it).
 */
class MarkReplyCommandsTest {
  static final long MASK = 0x3f000000L;
  static final Map<Long, Long> NETWORKS = Map.of(100L, 0x01000000L);
  static final Set<MarkElement> ELEMENTS = Set.of(new MarkElement(IpPrefix.parse("10.128.0.5"), 100, "default/web"));

  /** What the kernel holds after the plan was applied, hook chains and the network chain intact. */
  static MarkState applied(Optional<Set<String>> replyIfaces, boolean replyChain) {
    Map<String, Boolean> hooks = new java.util.HashMap<>(Map.of(MarkNftables.PREROUTING, true, MarkNftables.OUTPUT, true));
    if (replyChain) {
      hooks.put(MarkNftables.REPLY, true);
    }
    return new MarkState(true, Set.of("mark_v4", "mark_v6"), hooks, NETWORKS, Map.of(100L, MASK),
        Map.of(IpPrefix.parse("10.128.0.5"), ELEMENTS.iterator().next()), replyIfaces);
  }

  static List<String> describe(com.fasterxml.jackson.databind.node.ArrayNode cmds) {
    List<String> out = new ArrayList<>();
    for (JsonNode c : cmds) {
      String verb = c.fieldNames().next();
      JsonNode inner = c.get(verb);
      String object = inner.fieldNames().next();
      JsonNode body = inner.get(object);
      out.add(verb + " " + object + " " + body.path("name").asText(body.path("chain").asText())
          + (body.has("elem") ? " " + body.get("elem") : "")
          + (body.has("prio") ? " prio " + body.get("prio").asInt() : ""));
    }
    return out;
  }

  @Test
  void aStrictUplinkAddsTheSetItsElementAndTheChainAfterDstnat() {
    MarkState before = applied(Optional.empty(), false);

    List<String> cmds = describe(MarkNftables.commands(before, new MarkPlan(MASK, NETWORKS, ELEMENTS, Set.of("up2"))));

    assertThat(cmds).containsExactly(
        "add set mark_reply_ifaces",
        "add element mark_reply_ifaces [\"up2\"]",
        "add chain mark_reply prio -90",
        "add rule mark_reply");
    assertThat(MarkCommands.replyRule().toString())
        .isEqualTo("[{\"match\":{\"op\":\"==\",\"left\":{\"meta\":{\"key\":\"iifname\"}},\"right\":\"@mark_reply_ifaces\"}},"
            + "{\"vmap\":{\"key\":{\"payload\":{\"protocol\":\"ip\",\"field\":\"daddr\"}},\"data\":\"@mark_v4\"}}]");
  }

  @Test
  void asAppliedNothingIsDoneAndAChangedSetOnlyChangesItsElements() {
    MarkState now = applied(Optional.of(Set.of("up2")), true);

    assertThat(describe(MarkNftables.commands(now, new MarkPlan(MASK, NETWORKS, ELEMENTS, Set.of("up2"))))).isEmpty();
    assertThat(describe(MarkNftables.commands(now, new MarkPlan(MASK, NETWORKS, ELEMENTS, Set.of("up1")))))
        .containsExactly("delete element mark_reply_ifaces [\"up2\"]", "add element mark_reply_ifaces [\"up1\"]");
  }

  @Test
  void noStrictUplinkLeftRemovesTheChainBeforeTheSet() {
    MarkState now = applied(Optional.of(Set.of("up2")), true);

    assertThat(describe(MarkNftables.commands(now, new MarkPlan(MASK, NETWORKS, ELEMENTS, Set.of()))))
        .containsExactly("delete chain mark_reply", "delete set mark_reply_ifaces");
  }

  @Test
  void leavingMarkModeRemovesTheReplyChainBeforeTheSetAndTheMapsItUses() {
    MarkState now = applied(Optional.of(Set.of("up2")), true);

    List<String> cmds = describe(MarkNftables.commands(now, MarkPlan.none()));

    assertThat(cmds).contains("delete chain mark_reply", "delete set mark_reply_ifaces", "delete map mark_v4");
    assertThat(cmds.indexOf("delete chain mark_reply")).isLessThan(cmds.indexOf("delete set mark_reply_ifaces"))
        .isLessThan(cmds.indexOf("delete map mark_v4"));
  }
}
