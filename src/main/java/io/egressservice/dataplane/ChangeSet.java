package io.egressservice.dataplane;

import com.fasterxml.jackson.databind.node.ArrayNode;
import io.egressservice.netlink.Rule;
import io.egressservice.nft.EgressNftables.NftChange;
import java.util.List;

/**
 * The ordered difference between the plan and the kernel: rule additions first, then the nft
 * transaction, then the mark transaction (mark mode), then rule deletions, so a source whose table
 * changes, or a node that switches rule mode, is never without a rule.
 *
 * @param changes the same, described per service, in that order
 */
public record ChangeSet(
    List<Rule> ruleAdds,
    NftChange nft,
    boolean ensureNftBase,
    ArrayNode markCommands,
    List<Rule> ruleDeletes,
    List<Change> changes) {
  public ChangeSet {
    markCommands = markCommands.deepCopy();
    ruleAdds = List.copyOf(ruleAdds);
    ruleDeletes = List.copyOf(ruleDeletes);
    changes = List.copyOf(changes);
  }

  public boolean isEmpty() {
    return ruleAdds.isEmpty() && ruleDeletes.isEmpty() && nft.isEmpty() && !ensureNftBase && markCommands.isEmpty();
  }
}
