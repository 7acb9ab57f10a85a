package io.egressservice.nft;

import io.egressservice.kernel.GenerationSource;
import io.egressservice.kernel.NftException;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The cache's rules with a scripted generation and clock, no kernel. */
class ListingCacheTest {
  final AtomicLong gen = new AtomicLong(7);
  final AtomicLong now = new AtomicLong(0);
  boolean broken;
  final AtomicInteger listings = new AtomicInteger();
  final GenerationSource source = () -> {
    if (broken) {
      throw new NftException("injected");
    }
    return gen.get();
  };
  final ListingCache<String> cache = new ListingCache<>(source, 1_000, now::get);

  String list() {
    return "listing" + listings.incrementAndGet();
  }

  @Test
  void sameGenerationReusesTheListingAndAnyOtherListsAgain() {
    assertThat(cache.get(this::list)).isEqualTo("listing1");
    assertThat(cache.get(this::list)).isEqualTo("listing1");
    gen.set(8);
    assertThat(cache.get(this::list)).isEqualTo("listing2");
    gen.set(3); // any difference, not only an increase
    assertThat(cache.get(this::list)).isEqualTo("listing3");
    assertThat(cache.stats()).isEqualTo(new EgressNftables.ObserveStats(3, 1, 0));
  }

  @Test
  void oldListingsAreNotReused() {
    cache.get(this::list);
    now.set(1_000);
    assertThat(cache.get(this::list)).isEqualTo("listing1");
    now.set(1_001);
    assertThat(cache.get(this::list)).isEqualTo("listing2");
  }

  @Test
  void aCommitOfOursElsewhereInTheTableKeepsTheListingOnlyWhenNoOtherCommitCame() {
    cache.get(this::list);
    gen.set(8); // ours, on the other part of the table
    cache.committedElsewhere();
    assertThat(cache.get(this::list)).isEqualTo("listing1");

    cache.committedElsewhere(); // an empty transaction: nothing committed, nothing to forget
    assertThat(cache.get(this::list)).isEqualTo("listing1");

    gen.set(10); // ours and someone else's
    cache.committedElsewhere();
    assertThat(cache.get(this::list)).isEqualTo("listing2");

    gen.set(11);
    cache.committedElsewhere(); // the value was listed at 10: one commit since, ours
    gen.set(13); // then two more before the next observe: listed again
    assertThat(cache.get(this::list)).isEqualTo("listing3");
  }

  @Test
  void ourCommitKeepsTheExpectedStateOnlyWhenItWasTheOnlyCommit() {
    cache.get(this::list);
    gen.set(8); // exactly one commit: ours
    cache.committed("expected");
    assertThat(cache.get(this::list)).isEqualTo("expected");

    gen.set(10); // ours and someone else's
    cache.committed("expected2");
    assertThat(cache.get(this::list)).isEqualTo("listing2");

    gen.set(10); // no commit seen at all (the kernel had nothing to do): not trusted either
    cache.committed("expected3");
    assertThat(cache.get(this::list)).isEqualTo("listing3");
  }

  @Test
  void severalCommitsOfOursKeepTheirResultOnlyWhenNoOneElsesCameBetween() {
    String planned = cache.get(this::list);
    gen.set(10); // three transactions of ours
    cache.committedSeveral(planned, "after three", 3);
    assertThat(cache.get(this::list)).isEqualTo("after three");

    planned = cache.get(this::list);
    gen.set(13); // our two and someone else's
    cache.committedSeveral(planned, "after two", 2);
    assertThat(cache.get(this::list)).isEqualTo("listing2");
  }

  @Test
  void aResultPlannedFromAnEarlierListingDoesNotReplaceALaterOne() {
    String planned = cache.get(this::list);
    gen.set(8); // someone else's commit, seen by another reader's observe: listed again
    assertThat(cache.get(this::list)).isEqualTo("listing2");
    gen.set(9); // then ours, planned from the first listing
    cache.committedSeveral(planned, "planned from listing1", 1);
    assertThat(cache.get(this::list)).isEqualTo("listing3");
  }

  @Test
  void whatAnotherPartToldStaysPendingOnTopOfOurResult() {
    ListingCache.Patch<String> suffix = new ListingCache.Patch<>() {
      @Override
      public java.util.Optional<String> applyTo(String value) {
        return java.util.Optional.of(value + "+table");
      }

      @Override
      public ListingCache.Patch<String> then(ListingCache.Patch<String> later) {
        return ListingCache.Patch.sequence(this, later);
      }
    };
    String planned = cache.get(this::list);
    gen.set(8); // the other part's transaction
    cache.committedElsewhere(suffix);
    gen.set(10); // then two of ours
    cache.committedSeveral(planned, "ours", 2);
    assertThat(cache.get(this::list)).isEqualTo("ours+table");

    gen.set(12); // the other part's, with someone else's
    cache.committedElsewhere(suffix);
    assertThat(cache.get(this::list)).isEqualTo("listing2");
  }

  @Test
  void aReadDuringWhichSomeoneCommitsIsMadeAgainAndKeptUnderTheLaterGeneration() {
    // The first read's parts straddle a commit by someone else (generation 7 -> 8): read again.
    assertThat(cache.get(() -> {
      String read = list();
      if (listings.get() == 1) {
        gen.set(8);
      }
      return read;
    })).isEqualTo("listing2");
    assertThat(cache.get(this::list)).as("kept under 8").isEqualTo("listing2");

    // Commits during every read: bounded, and what the last read gave is not trusted afterwards.
    gen.set(9);
    assertThat(cache.get(() -> {
      String read = list();
      gen.incrementAndGet();
      return read;
    })).isEqualTo("listing" + (2 + ListingCache.CONSISTENT_READ_ATTEMPTS));
    assertThat(cache.get(this::list)).isEqualTo("listing" + (3 + ListingCache.CONSISTENT_READ_ATTEMPTS));
  }

  @Test
  void commitOnTopOfAStaleListingIsNotTrusted() {
    cache.get(this::list);
    gen.set(8); // someone else, then our commit is based on a listing we did not refresh
    cache.invalidate();
    gen.set(9);
    cache.committed("expected");
    assertThat(cache.get(this::list)).isEqualTo("listing2");
  }

  @Test
  void generationWrapsSkippingZero() {
    assertThat(ListingCache.next(0xffffffffL)).isEqualTo(1);
    assertThat(ListingCache.next(41)).isEqualTo(42);
  }

  @Test
  void unreadableGenerationListsEveryTime() {
    broken = true;
    assertThat(cache.get(this::list)).isEqualTo("listing1");
    assertThat(cache.get(this::list)).isEqualTo("listing2");
    cache.committed("expected");
    assertThat(cache.get(this::list)).isEqualTo("listing3");
    assertThat(cache.stats().generationFailures()).isEqualTo(4);
    broken = false;
    assertThat(cache.get(this::list)).isEqualTo("listing4");
    assertThat(cache.get(this::list)).isEqualTo("listing4");
  }
}
