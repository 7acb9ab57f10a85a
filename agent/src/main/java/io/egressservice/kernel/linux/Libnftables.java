package io.egressservice.kernel.linux;

import io.egressservice.kernel.NftException;
import com.sun.jna.Library;
import com.sun.jna.Native;
import com.sun.jna.Pointer;
import java.util.Map;

/**
 * JNA binding to the few functions of {@code libnftables.so.1} (nftables' own library, see
 * libnftables(3)) that the agent needs: a context with buffered JSON output, and one
 * {@code nft_run_cmd_from_buffer} per transaction. Only {@link NftClient} uses it.
 *
 * <p>All functions act in the network namespace of the calling thread at the time the context's
 * netlink socket was opened, so a context is created and used on one {@code NetnsThread}.
 */
interface Libnftables extends Library {
  String LIBRARY = "libnftables.so.1";
  String MISSING =
      "libnftables.so.1 not found: install libnftables1 (Debian/Ubuntu) or nftables (RHEL)";

  /** {@code NFT_CTX_DEFAULT}. */
  int NFT_CTX_DEFAULT = 0;
  /** {@code NFT_CTX_OUTPUT_JSON}: output (listings, errors stay text) as JSON; also enables JSON input. */
  int NFT_CTX_OUTPUT_JSON = 1 << 4;
  /** {@code NFT_CTX_OUTPUT_TERSE} ({@code nft -t}, nftables 0.9.1+): sets and maps listed without their elements. */
  int NFT_CTX_OUTPUT_TERSE = 1 << 11;

  Pointer nft_ctx_new(int flags);

  void nft_ctx_free(Pointer ctx);

  int nft_ctx_output_get_flags(Pointer ctx);

  void nft_ctx_output_set_flags(Pointer ctx, int flags);

  int nft_ctx_buffer_output(Pointer ctx);

  int nft_ctx_buffer_error(Pointer ctx);

  String nft_ctx_get_output_buffer(Pointer ctx);

  String nft_ctx_get_error_buffer(Pointer ctx);

  int nft_run_cmd_from_buffer(Pointer ctx, String buf);

  /**
   * {@code nft --check}: the batch is sent to the kernel, which validates every command and then aborts the whole
   * transaction (libnftables leaves out the batch's end message), so nothing is committed.
   */
  void nft_ctx_set_dry_run(Pointer ctx, boolean dry);

  /** The loaded library; throws {@link NftException} with an install hint when it is missing. */
  static Libnftables get() {
    return Holder.load();
  }

  final class Holder {
    private static volatile Libnftables instance;

    private Holder() {}

    static Libnftables load() {
      Libnftables lib = instance;
      if (lib != null) {
        return lib;
      }
      synchronized (Holder.class) {
        if (instance == null) {
          try {
            instance =
                Native.load(LIBRARY, Libnftables.class, Map.of(Library.OPTION_STRING_ENCODING, "UTF-8"));
          } catch (UnsatisfiedLinkError e) {
            throw new NftException(MISSING + " (" + e.getMessage() + ")", e);
          }
        }
        return instance;
      }
    }
  }
}
