package io.egressservice.dataplane;

import io.egressservice.netlink.Rule;
import io.egressservice.nft.EgressNftables.NftChange;
import java.util.List;

/**
 * The ordered difference between the plan and the kernel: rule additions first, then the nft
 * transaction, then rule deletions, so a source whose table changes is never without a rule.
 *
 * @param changes the same, described per service, in that order
 */
public record ChangeSet(
    List<Rule> ruleAdds, NftChange nft, boolean ensureNftBase, List<Rule> ruleDeletes, List<Change> changes) {
  public ChangeSet {
    ruleAdds = List.copyOf(ruleAdds);
    ruleDeletes = List.copyOf(ruleDeletes);
    changes = List.copyOf(changes);
  }

  public boolean isEmpty() {
    return ruleAdds.isEmpty() && ruleDeletes.isEmpty() && nft.isEmpty() && !ensureNftBase;
  }
}
