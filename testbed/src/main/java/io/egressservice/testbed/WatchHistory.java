package io.egressservice.testbed;

import io.fabric8.mockwebserver.crud.AttributeSet;
import java.util.ArrayDeque;
import java.util.List;
import java.util.Optional;

/**
 * The changes the API server made, in {@code resourceVersion} order, bounded as etcd's compaction bounds a real
 * server's: a watch resumed from a version whose successors are all still here gets exactly them; one from an
 * older version is told its history is gone (410), so its client lists again.
 */
final class WatchHistory {
  /**
   * One change: the object before ({@code before}, absent for a create) and after ({@code after}, absent for a
   * delete), with the attributes the mock matches watches against. A delete's {@code before} carries the version of
   * the delete itself, as a real server's DELETED event does, so a client resuming from it sees nothing twice.
   */
  record Change(long resourceVersion, Optional<AttributeSet> beforeKey, Optional<String> before,
      Optional<AttributeSet> afterKey, Optional<String> after) {

    /** The event a watch of {@code query} gets for this change, if any (the mock's rules for a label move). */
    Optional<String> eventFor(AttributeSet query) {
      boolean wasSeen = beforeKey.filter(k -> k.matches(query)).isPresent();
      boolean isSeen = afterKey.filter(k -> k.matches(query)).isPresent();
      if (wasSeen && isSeen) {
        return Optional.of(event("MODIFIED", after.orElseThrow()));
      } else if (wasSeen) {
        // it left the watch: a delete, or a change that no longer matches its selector
        return Optional.of(event("DELETED", after.or(() -> before).orElseThrow()));
      } else if (isSeen) {
        return Optional.of(event("ADDED", after.orElseThrow()));
      }
      return Optional.empty();
    }
  }

  static String event(String type, String object) {
    return "{\"type\":\"" + type + "\",\"object\":" + object + "}";
  }

  private final int capacity;
  private final ArrayDeque<Change> changes = new ArrayDeque<>();
  /** A watch from a version below this would miss changes no longer kept. */
  private long oldestServable;
  private long latest;

  WatchHistory(int capacity) {
    if (capacity < 1) {
      throw new IllegalArgumentException("a history keeps at least one change: " + capacity);
    }
    this.capacity = capacity;
  }

  synchronized void record(Change change) {
    changes.addLast(change);
    latest = Math.max(latest, change.resourceVersion());
    if (changes.size() > capacity) {
      oldestServable = changes.removeFirst().resourceVersion();
    }
  }

  /** Forgets every change up to {@code resourceVersion} (a restarted server's empty watch cache). */
  synchronized void expire(long resourceVersion) {
    changes.clear();
    oldestServable = Math.max(oldestServable, resourceVersion);
    latest = Math.max(latest, resourceVersion);
  }

  /** The changes after {@code resourceVersion}, in order; empty when some of them are no longer kept. */
  synchronized Optional<List<Change>> after(long resourceVersion) {
    if (resourceVersion < oldestServable) {
      return Optional.empty();
    }
    return Optional.of(changes.stream().filter(c -> c.resourceVersion() > resourceVersion).toList());
  }

  synchronized long oldestServable() {
    return oldestServable;
  }

  /** The version of the latest change recorded (or expiry): what a bookmark tells. */
  synchronized long latest() {
    return latest;
  }
}
