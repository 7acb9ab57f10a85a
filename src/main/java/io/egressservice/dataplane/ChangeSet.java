package io.egressservice.dataplane;

import com.fasterxml.jackson.databind.node.ArrayNode;
import io.egressservice.netlink.Rule;
import io.egressservice.nft.EgressNftables.NftChange;
import java.util.List;
import java.util.Map;

/**
 * The ordered difference between the plan and the kernel: rule additions first, then the nft
 * transaction, then the mark transaction (mark mode), then rule deletions, so a source whose table
 * changes, or a node that switches rule mode, is never without a rule.
 *
 * @param changes the same, described per service, in that order
 * @param srcValidMark devices (name to ifindex) that get {@code src_valid_mark=1} before the mark transaction
 */
public record ChangeSet(
    List<Rule> ruleAdds,
    NftChange nft,
    boolean ensureNftBase,
    ArrayNode markCommands,
    List<Rule> ruleDeletes,
    List<Change> changes,
    Map<String, Integer> srcValidMark) {
  public ChangeSet(List<Rule> ruleAdds, NftChange nft, boolean ensureNftBase, ArrayNode markCommands,
      List<Rule> ruleDeletes, List<Change> changes) {
    this(ruleAdds, nft, ensureNftBase, markCommands, ruleDeletes, changes, Map.of());
  }

  public ChangeSet {
    srcValidMark = Map.copyOf(srcValidMark);
    markCommands = markCommands.deepCopy();
    ruleAdds = List.copyOf(ruleAdds);
    ruleDeletes = List.copyOf(ruleDeletes);
    changes = List.copyOf(changes);
  }

  public boolean isEmpty() {
    return ruleAdds.isEmpty() && ruleDeletes.isEmpty() && nft.isEmpty() && !ensureNftBase && markCommands.isEmpty()
        && srcValidMark.isEmpty();
  }
}
