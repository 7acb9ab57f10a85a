package io.egressservice.netlink;

import static io.egressservice.netlink.NetlinkConstants.*;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The nftables ruleset generation of one network namespace, read over NETLINK_NETFILTER: the
 * kernel's {@code base_seq}, which every committed nftables transaction in the namespace increments
 * (by one, skipping 0) and nothing else changes. Listing does not change it, a failed (aborted)
 * transaction does not either. Two equal readings therefore mean that no table of the namespace was
 * changed in between, which lets a caller keep a parsed listing instead of listing again.
 *
 * <p>Wire format: a request {@code NFT_MSG_GETGEN} ({@code NFNL_SUBSYS_NFTABLES << 8 | 16}) with a
 * {@code struct nfgenmsg} (family AF_UNSPEC, version NFNETLINK_V0, res_id 0) and
 * NLM_F_REQUEST|NLM_F_ACK; the kernel answers {@code NFT_MSG_NEWGEN} carrying {@code NFTA_GEN_ID}
 * (a big-endian u32), then the ACK. CLI equivalent: the generation {@code nft monitor} prints, or
 * {@code nft list ruleset} comments with {@code -a}; there is no direct one.
 *
 * <p>The socket is created on the namespace's {@link NetnsThread}; {@link #read()} may be called
 * from any thread. Needs CAP_NET_ADMIN (nfnetlink checks it for every message) and the nf_tables
 * module.
 */
public final class NftGeneration implements AutoCloseable {
  /** {@code enum nf_tables_msg_types} in {@code <linux/netfilter/nf_tables.h>}. */
  static final int NFT_MSG_NEWGEN = 15;
  static final int NFT_MSG_GETGEN = 16;
  /** {@code enum nft_gen_attributes}. */
  static final int NFTA_GEN_ID = 1;
  static final int AF_UNSPEC = 0;

  private final NetnsThread thread;
  private final NftSocket socket;
  private boolean closed;

  private NftGeneration(NetnsThread thread, NftSocket socket) {
    this.thread = thread;
    this.socket = socket;
  }

  /**
   * Opens a NETLINK_NETFILTER socket in the namespace of {@code thread} (which stays the caller's).
   *
   * @throws NetlinkException when the socket cannot be created (e.g. no netfilter netlink)
   */
  public static NftGeneration open(NetnsThread thread) {
    return new NftGeneration(thread, NftSocket.open(thread));
  }

  /** The message type of a GETGEN request: {@code NFNL_SUBSYS_NFTABLES << 8 | NFT_MSG_GETGEN}. */
  static int requestType() {
    return NftSocket.type(NFT_MSG_GETGEN);
  }

  /** Appends one GETGEN request (for tests: compared byte for byte). */
  static void encodeRequest(NetlinkMessageWriter w, int seq) {
    w.begin(requestType(), NLM_F_REQUEST | NLM_F_ACK, seq);
    w.u8(AF_UNSPEC).u8(NftSocket.NFNETLINK_V0).u16(0); // res_id: 0 in either byte order
    w.end();
  }

  /**
   * Decodes the generation id of an NFT_MSG_NEWGEN payload ({@code struct nfgenmsg} + attributes),
   * as an unsigned value.
   */
  static long decodeGeneration(ByteBuffer payload) {
    if (payload.limit() < NftSocket.NFGENMSG_LEN) {
      throw new IllegalArgumentException("short nfgenmsg: " + payload.limit() + " bytes");
    }
    NetlinkAttributes a = NetlinkAttributes.parse(payload, NftSocket.NFGENMSG_LEN, payload.limit());
    byte[] id = a.bytes(NFTA_GEN_ID)
        .orElseThrow(() -> new IllegalArgumentException("NFT_MSG_NEWGEN without NFTA_GEN_ID"));
    if (id.length != 4) {
      throw new IllegalArgumentException("NFTA_GEN_ID has " + id.length + " bytes, expected 4");
    }
    return Integer.toUnsignedLong(ByteBuffer.wrap(id).order(ByteOrder.BIG_ENDIAN).getInt());
  }

  /**
   * The current generation (an unsigned 32-bit value, never 0 once a transaction has committed).
   *
   * @throws NetlinkException when the kernel refuses the request (EPERM without CAP_NET_ADMIN,
   *     EOPNOTSUPP / EAGAIN when nf_tables is not available, ...) or does not answer within the
   *     socket's receive timeout
   */
  public long read() {
    return thread.call(this::readOnThread);
  }

  private synchronized long readOnThread() {
    if (closed) {
      throw new IllegalStateException("nftables generation reader of " + thread.describe() + " is closed");
    }
    String op = "read the nftables generation (NFT_MSG_GETGEN)";
    long[] generation = {-1};
    NftSocket.Outcome outcome = socket.request(op, NftGeneration::encodeRequest, m -> {
      if (m.type() == NftSocket.type(NFT_MSG_NEWGEN)) {
        generation[0] = decodeGeneration(m.payload());
      }
    });
    if (outcome == NftSocket.Outcome.ABSENT) {
      throw NetlinkException.fromErrno(NetlinkException.ENOENT, op, thread.describe());
    }
    if (generation[0] < 0) {
      throw new NetlinkException(0, "read the nftables generation in " + thread.describe()
          + ": acknowledged without an NFT_MSG_NEWGEN answer");
    }
    return generation[0];
  }

  @Override
  public void close() {
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
    }
    socket.close();
  }
}
