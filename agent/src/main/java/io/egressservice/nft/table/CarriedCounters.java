package io.egressservice.nft.table;

import io.egressservice.kernel.NftException;
import io.egressservice.kernel.Nftables;
import io.egressservice.netlink.NftCounters;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;
import java.util.function.Function;

/**
 * The packets a table's named counters counted since this instance started, across rewrites: a replaced table
 * starts its counters at zero, so what they held is carried over just before. Not thread-safe: its table class
 * guards it.
 */
public final class CarriedCounters {
  private final Nftables nft;
  private final String family;
  private final String table;
  private final Function<NftCounters.Counter, Optional<String>> key;
  private final Map<String, Long> carried = new HashMap<>();

  private CarriedCounters(Nftables nft, String family, String table,
      Function<NftCounters.Counter, Optional<String>> key) {
    this.nft = Objects.requireNonNull(nft);
    this.family = Objects.requireNonNull(family);
    this.table = Objects.requireNonNull(table);
    this.key = key;
  }

  /** Counts keyed by the counters' names. */
  public static CarriedCounters byName(Nftables nft, String family, String table) {
    return new CarriedCounters(nft, family, table, c -> Optional.of(c.name()));
  }

  /** Counts keyed by the counters' comments (several counters of one comment add up; none: not counted). */
  public static CarriedCounters byComment(Nftables nft, String family, String table) {
    return new CarriedCounters(nft, family, table, NftCounters.Counter::comment);
  }

  /** Just before the table is replaced or removed: keeps what its counters hold (lost if they cannot be read). */
  public void carry() {
    try {
      current().forEach((k, v) -> carried.merge(k, v, Long::sum));
    } catch (NftException e) {
      // the counts since the last read are lost; the table is rewritten anyway
    }
  }

  /**
   * The packets counted since this instance started, by key: the carried counts plus, with {@code readTable}, what
   * the table's counters hold now (false when the table is known to be absent: nothing to ask the kernel).
   */
  public Map<String, Long> total(boolean readTable) {
    Map<String, Long> out = new TreeMap<>(carried);
    if (readTable) {
      current().forEach((k, v) -> out.merge(k, v, Long::sum));
    }
    return out;
  }

  private Map<String, Long> current() {
    Map<String, Long> out = new HashMap<>();
    nft.countersIfPresent(family, table).orElse(List.of())
        .forEach(c -> key.apply(c).ifPresent(k -> out.merge(k, c.packets(), Long::sum)));
    return out;
  }
}
