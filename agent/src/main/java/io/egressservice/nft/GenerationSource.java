package io.egressservice.nft;

import io.egressservice.netlink.NetlinkException;
import io.egressservice.netlink.NetnsThread;
import io.egressservice.netlink.NftGeneration;

/**
 * Where {@link EgressNftables} reads the nftables ruleset generation of its namespace, which tells
 * it whether its last listing is still current. A source that throws makes it list every time.
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

  /**
   * The kernel's generation over NETLINK_NETFILTER ({@link NftGeneration}) in the namespace of
   * {@code thread}. If the socket cannot even be opened, the source fails on every read, with that
   * reason.
   */
  static GenerationSource kernel(NetnsThread thread) {
    NftGeneration gen;
    try {
      gen = NftGeneration.open(thread);
    } catch (NetlinkException | IllegalStateException | UnsatisfiedLinkError e) {
      return unavailable("cannot open a NETLINK_NETFILTER socket in " + thread.describe() + ": " + e.getMessage());
    }
    return new GenerationSource() {
      @Override
      public long read() {
        return gen.read();
      }

      @Override
      public void close() {
        gen.close();
      }
    };
  }

  /** A source that always fails with {@code reason}: every observe lists the table. */
  static GenerationSource unavailable(String reason) {
    return () -> {
      throw new NftException("nftables generation unavailable: " + reason);
    };
  }
}
