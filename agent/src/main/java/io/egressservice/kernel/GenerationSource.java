package io.egressservice.kernel;

/**
 * Where the nftables readers read the nftables ruleset generation of its namespace, which tells
 * them whether their last listing is still current. A source that throws makes it list every time.
 */
public interface GenerationSource extends AutoCloseable {
  /**
   * The current generation (unsigned 32-bit).
   *
   * @throws RuntimeException when it cannot be read; the caller then lists the table
   */
  long read();

  @Override
  default void close() {}

  /** A source that always fails with {@code reason}: every observe lists the table. */
  static GenerationSource unavailable(String reason) {
    return () -> {
      throw new NftException("nftables generation unavailable: " + reason);
    };
  }
}
