package io.egressservice.controller;

import io.egressservice.model.ObjectRef;
import java.util.regex.Pattern;

/** What one Event says about one EgressService. */
public record EventRecord(ObjectRef object, String type, String reason, String message) {
  private static final Pattern COUNT = Pattern.compile("\\b\\d+ (endpoint|source)");

  /**
   * The message without its endpoint and source counts: they change with every scale event, which is not
   * an outcome change worth an Event (the Event written says the real numbers).
   */
  static String withoutCounts(String message) {
    return COUNT.matcher(message).replaceAll("N $1");
  }

  /** Says the same as {@code other}, counts aside. */
  boolean sameAs(EventRecord other) {
    return other != null && object.equals(other.object) && type.equals(other.type) && reason.equals(other.reason)
        && withoutCounts(message).equals(withoutCounts(other.message));
  }
}
