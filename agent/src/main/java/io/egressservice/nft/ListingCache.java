package io.egressservice.nft;

import java.util.function.BiFunction;
import io.egressservice.kernel.Nftables;
import io.egressservice.kernel.Kernel;
import io.egressservice.kernel.GenerationSource;
import io.egressservice.kernel.NftException;
import io.egressservice.netlink.NetlinkException;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The last parsed listing of the owned table, keyed by the nftables generation it was read at.
 *
 * <p>Soundness: the generation is read <em>before</em> the listing, so a commit that lands between
 * the two makes the next reading differ and forces a new listing (one listing too many, never one
 * too few). The owned table changes only through committed transactions (no element timeouts, and
 * no rule outside the table can update its sets from the packet path), so an unchanged generation
 * means an unchanged table.
 *
 * <p>After a transaction of our own, the expected state may be stored under the new generation, but
 * only when the generation advanced by exactly one since the state it was derived from was current
 * (so no other commit interleaved). A listing older than {@code maxAgeNanos} is never reused, a
 * safety net for anything the generation does not capture. When the generation cannot be read, the
 * cache is bypassed (every call lists) and the first failure is logged; a refusal for want of
 * CAP_NET_ADMIN is thrown instead, as the listing would fail the same way.
 *
 * <p>Not thread safe; {@link EgressNftables} synchronizes.
 */
final class ListingCache<T> {
  /**
   * A reader made by {@code make} on a libnftables context and a generation source of {@code kernel}'s own (the
   * source closed again when {@code make} fails; both the reader's to close after).
   */
  static <R> R openWithGeneration(Kernel kernel, BiFunction<Nftables, GenerationSource, R> make) {
    GenerationSource generation = kernel.openGeneration();
    try {
      return make.apply(kernel.openNftables(), generation);
    } catch (RuntimeException | Error e) {
      generation.close();
      throw e;
    }
  }

  private static final Logger LOG = LoggerFactory.getLogger(EgressNftables.class);
  /** Reads of a listing while commits keep landing between its parts. */
  static final int CONSISTENT_READ_ATTEMPTS = 3;

  private final GenerationSource source;
  private final long maxAgeNanos;
  private final LongSupplier clock;
  private boolean failureLogged;

  private long generation;
  private T value;
  private long listedAt;
  /** The generation of the last read, valid while {@link #lastReadValid}. */
  private long lastRead;
  private boolean lastReadValid;

  /** Commits of ours not yet folded into {@link #value}: applied once, when the value is next read. */
  private Patch<T> pending;

  private long listings;
  private long hits;
  private long failures;

  ListingCache(GenerationSource source, long maxAgeNanos, LongSupplier clock) {
    this.source = source;
    this.maxAgeNanos = maxAgeNanos;
    this.clock = clock;
  }

  /** The next generation after {@code g}: the kernel increments and skips 0. */
  static long next(long g) {
    long n = (g + 1) & 0xffffffffL;
    return n == 0 ? 1 : n;
  }

  private OptionalLong readGeneration() {
    try {
      long g = source.read();
      lastRead = g;
      lastReadValid = true;
      return OptionalLong.of(g);
    } catch (NetlinkException.PermissionDenied e) {
      // Without CAP_NET_ADMIN the listing fails too (and libnftables prints a raw line of its own on
      // stderr first): say the real reason once, instead of a warning followed by that failure.
      lastReadValid = false;
      throw new NftException.PermissionDenied(e.getMessage(), e.getMessage());
    } catch (RuntimeException e) {
      lastReadValid = false;
      failures++;
      if (!failureLogged) {
        failureLogged = true;
        LOG.warn("cannot read the nftables generation, listing the table on every observe: {}", e.getMessage());
      }
      return OptionalLong.empty();
    }
  }

  /** The cached value if the generation is unchanged (and it is young enough), else a new listing. */
  T get(Supplier<T> list) {
    OptionalLong g = readGeneration();
    if (g.isPresent() && value != null && generation == g.getAsLong()
        && clock.getAsLong() - listedAt <= maxAgeNanos) {
      if (pending != null) {
        Optional<T> patched = pending.applyTo(value);
        pending = null;
        value = patched.orElse(null);
      }
      if (value != null) {
        hits++;
        return value;
      }
    }
    long now = clock.getAsLong();
    T fresh = list.get();
    listings++;
    // A listing made of several reads (definitions, then each set's elements) is one ruleset's only when no commit
    // came in between: read again while the generation moves (bounded; after that, the next get lists again).
    for (int attempt = 1; g.isPresent() && attempt < CONSISTENT_READ_ATTEMPTS; attempt++) {
      OptionalLong after = readGeneration();
      if (after.isEmpty() || after.getAsLong() == g.getAsLong()) {
        break;
      }
      g = after;
      fresh = list.get();
      listings++;
    }
    pending = null;
    if (g.isPresent()) {
      generation = g.getAsLong();
      value = fresh;
      listedAt = now;
    } else {
      value = null;
    }
    return fresh;
  }

  /**
   * After a transaction of ours succeeded: keeps {@code expected} if exactly one commit (ours)
   * happened since the generation of the value returned by the last {@link #get}; else forgets.
   */
  void committed(T expected) {
    pending = null;
    carryOver(expected, false);
  }

  /**
   * What a transaction of ours changed, folded into the cached value only when it is next read, so that
   * a small transaction costs what it changed and not a copy of the whole listing.
   */
  interface Patch<T> {
    /** The value after the change; empty when that cannot be told (the next read lists). */
    Optional<T> applyTo(T value);

    /** This patch followed by {@code later}; may update this one in place (patches are owned by the cache). */
    Patch<T> then(Patch<T> later);

    /** {@code first}, then {@code second}, for patches of different kinds. */
    static <T> Patch<T> sequence(Patch<T> first, Patch<T> second) {
      return new Patch<>() {
        @Override
        public Optional<T> applyTo(T value) {
          return first.applyTo(value).flatMap(second::applyTo);
        }

        @Override
        public Patch<T> then(Patch<T> later) {
          return sequence(this, later);
        }
      };
    }
  }

  /**
   * After a transaction of ours succeeded without a listing before it (planned from what the caller knows
   * the table holds): keeps the cached value, with {@code change} to be applied on the next read, if
   * exactly one commit (ours) happened since the value was current; else forgets.
   */
  void committed(Patch<T> change) {
    boolean basedOnCurrent = valueCurrent();
    long before = lastRead;
    OptionalLong after = readGeneration();
    if (basedOnCurrent && after.isPresent() && after.getAsLong() == next(before)) {
      generation = after.getAsLong();
      pending = pending == null ? change : pending.then(change);
    } else {
      invalidate();
    }
  }

  /**
   * After a transaction of ours that did not touch what this cache holds (another part of the same
   * table): keeps the value under the new generation if at most one commit (ours) happened since the
   * value was current (an empty transaction commits nothing); else forgets.
   */
  void committedElsewhere() {
    carryOver(value, true);
  }

  /**
   * As {@link #committedElsewhere()}, for a transaction whose only effect on what this cache holds is {@code change},
   * one that commutes with any transaction of this cache's owner (the table now exists, say): kept pending on top.
   */
  void committedElsewhere(Patch<T> change) {
    boolean basedOnCurrent = valueCurrent();
    long before = lastRead;
    OptionalLong after = readGeneration();
    if (basedOnCurrent && after.isPresent() && (after.getAsLong() == next(before) || after.getAsLong() == before)) {
      generation = after.getAsLong();
      pending = pending == null ? change : pending.then(change);
    } else {
      invalidate();
    }
  }

  /**
   * After {@code commits} transactions of ours (in several, each its own commit) that were planned from {@code
   * basedOn} and together leave {@code expected}: keeps {@code expected} if {@code basedOn} is still the cached value
   * (no listing or patch replaced it since: the same object) and exactly {@code commits} commits happened since its
   * generation, so no one else's came in between; else forgets. What was told pending since by {@link
   * #committedElsewhere(Patch)} stays pending on top (it commutes).
   */
  void committedSeveral(T basedOn, T expected, int commits) {
    boolean basedOnCurrent = valueCurrent() && value == basedOn;
    long before = lastRead;
    OptionalLong after = readGeneration();
    long wanted = before;
    for (int i = 0; i < commits; i++) {
      wanted = next(wanted);
    }
    if (basedOnCurrent && after.isPresent() && after.getAsLong() == wanted) {
      generation = after.getAsLong();
      value = expected;
    } else {
      invalidate();
    }
  }

  /** Keeps {@code kept} under the generation now if only our commit (or none, when allowed) came since. */
  private void carryOver(T kept, boolean noCommitIsFine) {
    boolean basedOnCurrent = valueCurrent();
    long before = lastRead;
    OptionalLong after = readGeneration();
    if (basedOnCurrent && after.isPresent()
        && (after.getAsLong() == next(before) || noCommitIsFine && after.getAsLong() == before)) {
      generation = after.getAsLong();
      value = kept;
      // listedAt stays: the age counts from the last real listing.
    } else {
      invalidate();
    }
  }

  /** Whether there is a value and it is of the generation last read (the state our next commit starts from). */
  private boolean valueCurrent() {
    return lastReadValid && value != null && generation == lastRead;
  }

  void invalidate() {
    value = null;
    pending = null;
  }

  /**
   * Whether the cached value is the state at generation {@code g}: every commit up to {@code g} was ours and
   * followed here. False once a commit by anyone else moved the generation (or nothing is cached).
   */
  boolean holdsGeneration(long g) {
    return value != null && generation == g;
  }

  EgressNftables.ObserveStats stats() {
    return new EgressNftables.ObserveStats(listings, hits, failures);
  }

  void close() {
    source.close();
  }
}
