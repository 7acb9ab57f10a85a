package io.egressservice.dataplane;

import com.fasterxml.jackson.databind.node.ArrayNode;
import io.egressservice.netlink.Route;
import io.egressservice.netlink.Rule;
import io.egressservice.nft.EgressNftables.NftChange;
import io.egressservice.nft.MarkNftables.MarkOutcome;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The ordered difference between the plan and the kernel: throw-route additions first, then rule
 * additions, the nft transaction, the mark transaction (mark mode), rule deletions and throw-route
 * deletions last, so a source whose table changes, or a node that switches rule mode, is never without
 * a rule, and a table is never looked up before its in-cluster destinations are thrown back.
 *
 * @param changes the same, described per service, in that order
 * @param srcValidMark devices (name to ifindex) that get {@code src_valid_mark=1} before the mark transaction
 * @param steering the steering device and routes: applied before the rule additions and after the deletions
 * @param markOutcome what the mark commands were planned from and leave (empty: not known, the cache lists after)
 */
public record ChangeSet(
    List<Rule> ruleAdds,
    NftChange nft,
    boolean ensureNftBase,
    ArrayNode markCommands,
    List<Rule> ruleDeletes,
    List<Route> routeAdds,
    List<Route> routeDeletes,
    List<Change> changes,
    Map<String, Integer> srcValidMark,
    SteeringChanges steering,
    Optional<MarkOutcome> markOutcome) {
  public ChangeSet(List<Rule> ruleAdds, NftChange nft, boolean ensureNftBase, ArrayNode markCommands,
      List<Rule> ruleDeletes, List<Change> changes) {
    this(ruleAdds, nft, ensureNftBase, markCommands, ruleDeletes, List.of(), List.of(), changes, Map.of(),
        SteeringChanges.none(), Optional.empty());
  }

  public ChangeSet {
    srcValidMark = Map.copyOf(srcValidMark);
    routeAdds = List.copyOf(routeAdds);
    routeDeletes = List.copyOf(routeDeletes);
    markCommands = markCommands.deepCopy();
    ruleAdds = List.copyOf(ruleAdds);
    ruleDeletes = List.copyOf(ruleDeletes);
    changes = List.copyOf(changes);
  }

  public boolean isEmpty() {
    return ruleAdds.isEmpty() && ruleDeletes.isEmpty() && routeAdds.isEmpty() && routeDeletes.isEmpty() && nft.isEmpty()
        && !ensureNftBase && markCommands.isEmpty() && srcValidMark.isEmpty() && steering.isEmpty();
  }
}
