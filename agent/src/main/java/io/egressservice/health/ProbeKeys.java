package io.egressservice.health;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The shared secret behind the probe proofs ({@link ProbeProof}), read from a file and read again when it changes: a
 * Secret mounted into the pod ({@code key}, and optionally {@code previous} in the same directory) is updated in place
 * by the kubelet (an atomic swap of the directory's {@code ..data} link), so a rotation needs no restart.
 *
 * <p>An agent proves with {@code key}; the allocator accepts a proof under {@code key} or {@code previous}. A missing
 * or empty file is no key (an agent answers without proof, an allocator cannot check any); a key shorter than
 * {@link #MIN_KEY_BYTES} is refused, as a guessable key proves nothing. The files are read at most once per {@code
 * recheck}, so a probe costs no file read.
 */
public final class ProbeKeys {
  private static final Logger LOG = LoggerFactory.getLogger(ProbeKeys.class);
  /** 256 bits of a random key, or 32 characters of a printable one (the chart's has 64 of 62 kinds). */
  public static final int MIN_KEY_BYTES = 32;
  /** The sibling file of {@code key} that holds the key being rotated out. */
  public static final String PREVIOUS = "previous";
  public static final Duration DEFAULT_RECHECK = Duration.ofSeconds(2);

  /** One key; {@link #fingerprint} names it in logs and metrics without revealing it. */
  public static final class Key {
    private final byte[] bytes;
    private final String fingerprint;

    Key(byte[] bytes) {
      this.bytes = bytes.clone();
      this.fingerprint = HexFormat.of().formatHex(sha256(bytes), 0, 4);
    }

    byte[] bytes() {
      return bytes.clone();
    }

    /** The first 8 hex digits of the key's SHA-256: enough to tell two keys apart, nothing to guess one by. */
    public String fingerprint() {
      return fingerprint;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Key k && MessageDigest.isEqual(k.bytes, bytes);
    }

    @Override
    public int hashCode() {
      return fingerprint.hashCode();
    }

    @Override
    public String toString() {
      return "key " + fingerprint;
    }
  }

  /** What the files hold at one moment. */
  public record Loaded(Optional<Key> current, Optional<Key> previous, Optional<String> problem) {
    /** The keys a proof may be made with: current first. */
    public List<Key> accepted() {
      List<Key> keys = new ArrayList<>();
      current.ifPresent(keys::add);
      previous.filter(p -> !current.equals(Optional.of(p))).ifPresent(keys::add);
      return List.copyOf(keys);
    }
  }

  private static final Loaded NONE = new Loaded(Optional.empty(), Optional.empty(), Optional.empty());

  private final Optional<Path> file;
  private final long recheckNanos;
  private final LongSupplier nanos;
  private Loaded loaded = NONE;
  private long loadedAtNanos;
  private boolean everLoaded;

  private ProbeKeys(Optional<Path> file, Duration recheck, LongSupplier nanos) {
    this.file = Objects.requireNonNull(file);
    this.recheckNanos = recheck.toNanos();
    this.nanos = nanos;
  }

  /** Without a file nothing is ever read or changed, so one instance serves every caller (and compares equal). */
  private static final ProbeKeys NO_KEY = new ProbeKeys(Optional.empty(), DEFAULT_RECHECK, System::nanoTime);

  /** No key configured: nothing is proved or checked. */
  public static ProbeKeys none() {
    return NO_KEY;
  }

  /** The key in {@code file} (its sibling {@value #PREVIOUS} too), read again at most every {@code recheck}. */
  public static ProbeKeys fromFile(Path file, Duration recheck) {
    return new ProbeKeys(Optional.of(file), recheck, System::nanoTime);
  }

  /** Whether a key file is configured at all (it may be missing or empty now). */
  public boolean configured() {
    return file.isPresent();
  }

  /** Where the key is read from, for messages. */
  public Optional<Path> file() {
    return file;
  }

  /** The keys now: the files are read again when {@code recheck} has passed since the last read. */
  public synchronized Loaded now() {
    if (file.isEmpty()) {
      return NONE;
    }
    long t = nanos.getAsLong();
    if (!everLoaded || t - loadedAtNanos >= recheckNanos) {
      Loaded next = read(file.get());
      if (!everLoaded || !next.equals(loaded)) {
        report(next);
      }
      loaded = next;
      loadedAtNanos = t;
      everLoaded = true;
    }
    return loaded;
  }

  private void report(Loaded next) {
    if (next.problem().isPresent()) {
      LOG.warn("probe key {}: {}; probe answers are not proved until it is fixed", file.get(), next.problem().get());
    } else if (next.current().isEmpty()) {
      LOG.warn("probe key {}: no key there (yet): probe answers are not proved (docs/operate.md, \"Probe proofs\")",
          file.get());
    } else {
      LOG.info("probe key {}: using key {}{}", file.get(), next.current().get().fingerprint(),
          next.previous().map(p -> ", also accepting the previous key " + p.fingerprint()).orElse(""));
    }
  }

  static Loaded read(Path keyFile) {
    Path previousFile = keyFile.resolveSibling(PREVIOUS);
    try {
      Optional<Key> current = key(keyFile);
      Optional<Key> previous = key(previousFile);
      return new Loaded(current, previous, Optional.empty());
    } catch (IllegalArgumentException | IOException e) {
      return new Loaded(Optional.empty(), Optional.empty(), Optional.of(e.getMessage()));
    }
  }

  /** The key a file holds, without its trailing line break; empty when the file is missing or empty. */
  private static Optional<Key> key(Path f) throws IOException {
    byte[] b;
    try {
      b = Files.readAllBytes(f);
    } catch (NoSuchFileException e) {
      return Optional.empty();
    }
    int n = b.length;
    while (n > 0 && (b[n - 1] == '\n' || b[n - 1] == '\r')) {
      n--;
    }
    if (n == 0) {
      return Optional.empty();
    }
    if (n < MIN_KEY_BYTES) {
      throw new IllegalArgumentException(f.getFileName() + " holds " + n + " bytes, fewer than " + MIN_KEY_BYTES
          + " (make one with: head -c 48 /dev/urandom | base64)");
    }
    byte[] k = Arrays.copyOf(b, n);
    Arrays.fill(b, (byte) 0);
    return Optional.of(new Key(k));
  }

  static byte[] sha256(byte[] b) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(b);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JVM has no SHA-256", e);
    }
  }
}
