package io.egressservice.health;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.InvalidKeyException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.List;
import java.util.Optional;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The challenge and answer that prove a health answer comes from an agent holding the probe key ({@link ProbeKeys}),
 * for the node it names. The allocator sends {@value #CHALLENGE_HEADER}: 32 fresh random bytes (base64url) with each
 * {@code GET /healthz}; the agent answers with {@value #PROOF_HEADER}: {@code v1 <base64url HMAC-SHA256>} over
 * {@link #DOMAIN}, the challenge, its node name, its pod UID and the status it answers, each length-prefixed. The
 * node and pod UID travel in the {@link ProbeIdentity} headers as before; the allocator checks the MAC for the node it
 * probed, so a valid proof also says the answer is that node's agent's, and that its status is the agent's own.
 *
 * <p>What it does not do: hide anything (the port is plain HTTP), or keep someone who relays the allocator's request
 * to the real agent and its answer back from doing so (a relay that changes nothing is a path to the agent).
 */
public final class ProbeProof {
  public static final String CHALLENGE_HEADER = "Egress-Probe-Challenge";
  public static final String PROOF_HEADER = "Egress-Agent-Proof";
  /** Domain separation: a MAC made for this purpose and version is no MAC for any other message under the key. */
  public static final String DOMAIN = "egress-service-agent probe answer v1";
  private static final String VERSION = "v1 ";
  private static final int CHALLENGE_BYTES = 32;
  /** At least 128 bits, at most what {@link #newChallenge} makes: base64url of 16 to 64 bytes. */
  private static final int MIN_CHALLENGE_CHARS = 22;
  private static final int MAX_CHALLENGE_CHARS = 86;

  private ProbeProof() {}

  /** A fresh challenge: 256 bits from {@code random}, base64url without padding. */
  public static String newChallenge(SecureRandom random) {
    byte[] b = new byte[CHALLENGE_BYTES];
    random.nextBytes(b);
    return Base64.getUrlEncoder().withoutPadding().encodeToString(b);
  }

  /** Whether a challenge is one an allocator could have sent (the agent proves nothing else). */
  public static boolean wellFormed(String challenge) {
    return challenge != null && challenge.length() >= MIN_CHALLENGE_CHARS && challenge.length() <= MAX_CHALLENGE_CHARS
        && challenge.chars().allMatch(c -> c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
            || c == '-' || c == '_');
  }

  /** The header value that proves this answer under {@code key}. */
  public static String prove(ProbeKeys.Key key, String challenge, String node, Optional<String> podUid, int status) {
    return VERSION + Base64.getUrlEncoder().withoutPadding().encodeToString(mac(key, challenge, node, podUid, status));
  }

  /**
   * Whether {@code proof} (the header's value, if any) proves an answer of {@code node}'s agent with {@code status}
   * to {@code challenge} under one of {@code keys}. Compared in constant time.
   */
  public static boolean verify(List<ProbeKeys.Key> keys, Optional<String> proof, String challenge, String node,
      Optional<String> podUid, int status) {
    if (proof.isEmpty() || !proof.get().startsWith(VERSION)) {
      return false;
    }
    byte[] given;
    try {
      given = Base64.getUrlDecoder().decode(proof.get().substring(VERSION.length()).trim());
    } catch (IllegalArgumentException e) {
      return false;
    }
    boolean ok = false;
    for (ProbeKeys.Key k : keys) {
      ok |= MessageDigest.isEqual(mac(k, challenge, node, podUid, status), given);
    }
    return ok;
  }

  private static byte[] mac(ProbeKeys.Key key, String challenge, String node, Optional<String> podUid, int status) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(key.bytes(), "HmacSHA256"));
      for (String field : List.of(DOMAIN, challenge, node, podUid.orElse(""), Integer.toString(status))) {
        byte[] b = field.getBytes(StandardCharsets.UTF_8);
        mac.update(ByteBuffer.allocate(4).putInt(b.length).array());
        mac.update(b);
      }
      return mac.doFinal();
    } catch (NoSuchAlgorithmException | InvalidKeyException e) {
      throw new IllegalStateException("HmacSHA256 is not available: " + e.getMessage(), e);
    }
  }
}
