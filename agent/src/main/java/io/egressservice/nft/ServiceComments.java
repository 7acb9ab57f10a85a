package io.egressservice.nft;

import io.egressservice.model.ObjectRef;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * The comment of a map element: the service's {@code namespace/name}, bounded to nft's 128 bytes. A longer
 * name (the API allows 63 + 1 + 253 bytes for an EgressService; a file or a lenient API server anything)
 * would make nft refuse the whole transaction, freezing every service of the node. Such a name is cut at a
 * character boundary and ends in {@code ~} and 16 hex digits of its SHA-256, so the comment stays unique per
 * service and the same on every reconcile, and {@code status} maps it back through the plan's services.
 */
public final class ServiceComments {
  static final int HASH_HEX = 16;

  private ServiceComments() {}

  /** The comment for {@code service}. */
  public static String of(ObjectRef service) {
    String full = service.toString();
    if (fitsCertainly(service) || utf8Length(full) <= EgressNftables.MAX_COMMENT_BYTES) {
      return full;
    }
    return bounded(full);
  }

  /** Whether {@code comment} is the one {@link #of} gives {@code service}, without building it for short names. */
  public static boolean matches(ObjectRef service, String comment) {
    if (fitsCertainly(service)) {
      return service.printsAs(comment);
    }
    return of(service).equals(comment);
  }

  /** Every char is at most 3 UTF-8 bytes: names this short always fit. */
  private static boolean fitsCertainly(ObjectRef service) {
    return 3 * (service.namespace().length() + 1 + service.name().length()) <= EgressNftables.MAX_COMMENT_BYTES;
  }

  private static String bounded(String full) {
    String suffix = "~" + HexFormat.of().formatHex(sha256(full), 0, HASH_HEX / 2);
    int budget = EgressNftables.MAX_COMMENT_BYTES - suffix.length();
    StringBuilder head = new StringBuilder();
    int bytes = 0;
    for (int i = 0; i < full.length(); ) {
      int cp = full.codePointAt(i);
      int len = new String(Character.toChars(cp)).getBytes(StandardCharsets.UTF_8).length;
      if (bytes + len > budget) {
        break;
      }
      head.appendCodePoint(cp);
      bytes += len;
      i += Character.charCount(cp);
    }
    return head + suffix;
  }

  private static int utf8Length(String s) {
    int n = 0;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c < 0x80) {
        n += 1;
      } else if (c < 0x800) {
        n += 2;
      } else if (Character.isHighSurrogate(c)) {
        n += 4;
        i++;
      } else {
        n += 3;
      }
    }
    return n;
  }

  private static byte[] sha256(String s) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is part of every JDK", e);
    }
  }
}
