package io.egressservice.nft;

import static io.egressservice.nft.EgressTableLayout.command;
import static io.egressservice.nft.EgressTableLayout.inClusterSet;
import static io.egressservice.nft.EgressTableLayout.setRef;
import static io.egressservice.nft.EgressTableLayout.snatMap;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.nft.EgressListing.Listing;
import io.egressservice.nft.EgressListing.ObjectStatus;
import io.egressservice.nft.EgressListing.Observed;
import io.egressservice.nft.EgressNftables.IpRange;
import io.egressservice.nft.EgressNftables.NftChange;
import io.egressservice.nft.EgressNftables.SnatElement;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * One SNAT transaction worked out from what the table holds: the commands (only deletions of elements that are
 * there, a changed element deleted and re-added, nothing for one already present: nft 1.0.6 has no
 * delete-if-present and refuses an add over a different value), and the listing the table will show once it has
 * committed, so that the listing cache need not ask again.
 */
final class SnatTransaction {
  private static final JsonNodeFactory F = JsonNodeFactory.instance;

  private SnatTransaction() {}

  /**
   * What a listing would show after {@link #planFrom}'s transaction committed on top of {@code obs};
   * empty where that is not modelled (a broken base left as it is).
   */
  static Optional<Observed> expectedAfter(Observed obs, NftChange change, boolean ensureBase) {
    if (!ensureBase && !obs.baseIntact()) {
      return Optional.empty();
    }
    Set<String> recreated = new HashSet<>();
    Map<String, ObjectStatus> objects = new HashMap<>();
    for (Map.Entry<String, ObjectStatus> e : obs.objects().entrySet()) {
      if (e.getValue() != ObjectStatus.OK) {
        recreated.add(e.getKey());
      }
      objects.put(e.getKey(), ObjectStatus.OK);
    }
    Map<IpPrefix, SnatElement> snat = new HashMap<>();
    for (Map.Entry<IpPrefix, SnatElement> e : obs.snat().entrySet()) {
      if (!recreated.contains(snatMap(e.getValue().family()))) {
        snat.put(e.getKey(), e.getValue());
      }
    }
    for (SnatElement e : change.deleteSnat()) {
      snat.remove(e.source());
    }
    for (SnatElement e : change.addSnat()) {
      snat.put(e.source(), e);
    }
    List<IpRange> inCluster;
    if (change.replaceInCluster().isPresent()) {
      inCluster = IpRanges.merge(change.replaceInCluster().get().stream().map(IpRange::of).toList());
    } else {
      inCluster = new ArrayList<>();
      for (IpRange r : obs.inCluster()) {
        if (!recreated.contains(inClusterSet(r.family()))) {
          inCluster.add(r);
        }
      }
    }
    return Optional.of(new Observed(true, objects, ObjectStatus.OK, snat, inCluster));
  }

  /**
   * The one transaction that takes the table {@code obs} shows to {@code change} applied (see {@link
   * EgressNftables#apply}); {@code {"nftables":[]}} when nothing needs doing.
   */
  static JsonNode planFrom(Observed obs, NftChange change, boolean ensureBase) {
    ArrayNode cmds = F.arrayNode();
    Set<String> recreated = new HashSet<>();
    if (ensureBase) {
      EgressTableLayout.ensureBase(obs, cmds, recreated);
    }
    Map<IpPrefix, SnatElement> present = new HashMap<>();
    for (Map.Entry<IpPrefix, SnatElement> e : obs.snat().entrySet()) {
      if (!recreated.contains(snatMap(e.getValue().family()))) {
        present.put(e.getKey(), e.getValue());
      }
    }

    if (change.replaceInCluster().isPresent()) {
      List<IpRange> merged = IpRanges.merge(change.replaceInCluster().get().stream().map(IpRange::of).toList());
      for (IpFamily f : IpFamily.values()) {
        if (obs.tablePresent() && obs.objects().get(inClusterSet(f)) != ObjectStatus.ABSENT
            && !recreated.contains(inClusterSet(f))) {
          cmds.add(command("flush", "set", setRef(inClusterSet(f))));
        }
        ArrayNode elems = F.arrayNode();
        for (IpRange r : merged) {
          if (r.family() == f) {
            elems.add(IpRanges.intervalElement(r));
          }
        }
        if (!elems.isEmpty()) {
          cmds.add(command("add", "element", setRef(inClusterSet(f)).set("elem", elems)));
        }
      }
    }

    // Deletions: requested ones that are present, plus keys that an add changes.
    Map<IpFamily, Set<IpPrefix>> deleteKeys = new EnumMap<>(IpFamily.class);
    Map<IpFamily, List<SnatElement>> adds = new EnumMap<>(IpFamily.class);
    for (SnatElement e : change.deleteSnat()) {
      if (present.containsKey(e.source())) {
        deleteKeys.computeIfAbsent(e.family(), k -> new LinkedHashSet<>()).add(e.source());
      }
    }
    for (SnatElement e : sorted(change.addSnat())) {
      SnatElement old = present.get(e.source());
      Set<IpPrefix> deleting = deleteKeys.getOrDefault(e.family(), Set.of());
      if (old != null && old.equals(e) && !deleting.contains(e.source())) {
        continue; // already there exactly
      }
      if (old != null) {
        deleteKeys.computeIfAbsent(e.family(), k -> new LinkedHashSet<>()).add(e.source());
      }
      adds.computeIfAbsent(e.family(), k -> new ArrayList<>()).add(e);
    }
    for (IpFamily f : IpFamily.values()) {
      Set<IpPrefix> keys = deleteKeys.getOrDefault(f, Set.of());
      if (!keys.isEmpty()) {
        ArrayNode elems = F.arrayNode();
        keys.stream().sorted().forEach(k -> elems.add(k.addressText()));
        cmds.add(command("delete", "element", setRef(snatMap(f)).set("elem", elems)));
      }
    }
    for (IpFamily f : IpFamily.values()) {
      List<SnatElement> list = adds.getOrDefault(f, List.of());
      if (!list.isEmpty()) {
        ArrayNode elems = F.arrayNode();
        list.forEach(e -> elems.add(mapElement(e)));
        cmds.add(command("add", "element", setRef(snatMap(f)).set("elem", elems)));
      }
    }
    ObjectNode doc = F.objectNode();
    doc.set("nftables", cmds);
    return doc;
  }

  /** Element changes of the fast path, replayed on the cached listing when it is next read. */
  static final class SnatPatch implements ListingCache.Patch<Listing> {
    private final Map<IpPrefix, Optional<SnatElement>> bySource = new HashMap<>();

    SnatPatch(NftChange change) {
      change.deleteSnat().forEach(e -> bySource.put(e.source(), Optional.empty()));
      change.addSnat().forEach(e -> bySource.put(e.source(), Optional.of(e)));
    }

    @Override
    public Optional<Listing> applyTo(Listing listing) {
      Observed o = listing.observed();
      if (!o.baseIntact()) {
        return Optional.empty();
      }
      Map<IpPrefix, SnatElement> snat = new HashMap<>(o.snat());
      bySource.forEach((source, e) -> {
        if (e.isPresent()) {
          snat.put(source, e.get());
        } else {
          snat.remove(source);
        }
      });
      return Optional.of(Listing.of(new Observed(true, o.objects(), o.chain(), snat, o.inCluster())));
    }

    @Override
    public ListingCache.Patch<Listing> then(ListingCache.Patch<Listing> later) {
      bySource.putAll(((SnatPatch) later).bySource);
      return this;
    }
  }

  private static JsonNode mapElement(SnatElement e) {
    ArrayNode pair = F.arrayNode();
    if (e.comment().isEmpty()) {
      pair.add(e.source().addressText());
    } else {
      pair.addObject().putObject("elem").put("val", e.source().addressText()).put("comment", e.comment());
    }
    pair.add(e.target().addressText());
    return pair;
  }

  static List<SnatElement> sorted(Set<SnatElement> elements) {
    return elements.stream().sorted(Comparator.comparing(SnatElement::source)).toList();
  }
}
