package io.egressservice.kernel.linux;

import com.sun.jna.Library;
import com.sun.jna.Native;
import java.util.Optional;

/**
 * Gives the native heap that libnftables freed back to the system once a client has passed about a megabyte of
 * commands and output through it. libnftables builds its cache and parse trees with malloc: a transaction or listing
 * of 55,000 elements takes 60-70 MiB of native heap for a moment, and glibc keeps what was freed for later mallocs
 * instead of returning it, so the agent's RSS stayed that much higher after each (the JVM's own periodic trim,
 * {@code -XX:TrimNativeHeapInterval}, comes up to 10 s later, and in a 512 MiB cgroup a cold start of 5,000 services
 * was killed before it came). Small commands, the steady state, never trim.
 *
 * <p>{@code malloc_trim(3)} is glibc's; where libc has none (musl) nothing is trimmed.
 */
final class NativeHeapTrim {
  /** Characters of commands and output between two trims. */
  static final long THRESHOLD_CHARS = 1 << 20;
  private static final Optional<Glibc> GLIBC = load();

  interface Glibc extends Library {
    int malloc_trim(long pad);
  }

  private long sinceTrim;

  /** Counts a call's input and output; trims (on the calling thread) once they add up to the threshold. */
  void passed(long chars) {
    sinceTrim += chars;
    if (sinceTrim >= THRESHOLD_CHARS) {
      sinceTrim = 0;
      GLIBC.ifPresent(c -> c.malloc_trim(0));
    }
  }

  private static Optional<Glibc> load() {
    try {
      Glibc c = Native.load("c", Glibc.class);
      c.malloc_trim(Long.MAX_VALUE); // resolves the symbol now; a pad this large trims nothing
      return Optional.of(c);
    } catch (UnsatisfiedLinkError e) {
      return Optional.empty();
    }
  }
}
