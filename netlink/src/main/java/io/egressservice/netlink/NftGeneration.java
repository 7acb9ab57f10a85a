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
  /** {@code NETLINK_NETFILTER} in {@code <linux/netlink.h>}. */
  static final int NETLINK_NETFILTER = 12;
  /** {@code NFNL_SUBSYS_NFTABLES} in {@code <linux/netfilter/nfnetlink.h>}. */
  static final int NFNL_SUBSYS_NFTABLES = 10;
  /** {@code enum nf_tables_msg_types} in {@code <linux/netfilter/nf_tables.h>}. */
  static final int NFT_MSG_NEWGEN = 15;
  static final int NFT_MSG_GETGEN = 16;
  /** {@code enum nft_gen_attributes}. */
  static final int NFTA_GEN_ID = 1;
  static final int NFNETLINK_V0 = 0;
  static final int AF_UNSPEC = 0;
  static final int NFGENMSG_LEN = 4;

  private static final int RECEIVE_BYTES = 64 * 1024;

  private final NetnsThread thread;
  private final NetlinkSocket socket;
  private final ByteBuffer sendBuffer = ByteBuffer.allocateDirect(256);
  private final ByteBuffer receiveBuffer = ByteBuffer.allocateDirect(RECEIVE_BYTES).order(ByteOrder.nativeOrder());
  private final NetlinkMessageWriter writer = new NetlinkMessageWriter(sendBuffer);
  private int seq = (int) (System.nanoTime() & 0x3fffffff);
  private boolean closed;

  private NftGeneration(NetnsThread thread, NetlinkSocket socket) {
    this.thread = thread;
    this.socket = socket;
  }

  /**
   * Opens a NETLINK_NETFILTER socket in the namespace of {@code thread} (which stays the caller's).
   *
   * @throws NetlinkException when the socket cannot be created (e.g. no netfilter netlink)
   */
  public static NftGeneration open(NetnsThread thread) {
    NetlinkSocket s = thread.call(() -> {
      NetlinkSocket sock = NetlinkSocket.open(NETLINK_NETFILTER, 0, thread.describe());
      sock.setOption(SOL_NETLINK, NETLINK_EXT_ACK, 1);
      sock.setOption(SOL_NETLINK, NETLINK_CAP_ACK, 1);
      return sock;
    });
    return new NftGeneration(thread, s);
  }

  /** The message type of a GETGEN request: {@code NFNL_SUBSYS_NFTABLES << 8 | NFT_MSG_GETGEN}. */
  static int requestType() {
    return NFNL_SUBSYS_NFTABLES << 8 | NFT_MSG_GETGEN;
  }

  /** Appends one GETGEN request (for tests: compared byte for byte). */
  static void encodeRequest(NetlinkMessageWriter w, int seq) {
    w.begin(requestType(), NLM_F_REQUEST | NLM_F_ACK, seq);
    w.u8(AF_UNSPEC).u8(NFNETLINK_V0).u16(0); // res_id: 0 in either byte order
    w.end();
  }

  /**
   * Decodes the generation id of an NFT_MSG_NEWGEN payload ({@code struct nfgenmsg} + attributes),
   * as an unsigned value.
   */
  static long decodeGeneration(ByteBuffer payload) {
    if (payload.limit() < NFGENMSG_LEN) {
      throw new IllegalArgumentException("short nfgenmsg: " + payload.limit() + " bytes");
    }
    NetlinkAttributes a = NetlinkAttributes.parse(payload, NFGENMSG_LEN, payload.limit());
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
   *     EOPNOTSUPP / EAGAIN when nf_tables is not available, ...)
   */
  public long read() {
    return thread.call(this::readOnThread);
  }

  private synchronized long readOnThread() {
    if (closed) {
      throw new IllegalStateException("nftables generation reader of " + thread.describe() + " is closed");
    }
    writer.clear();
    int s = ++seq;
    encodeRequest(writer, s);
    socket.send(sendBuffer, writer.position());
    long generation = -1;
    while (true) {
      int len = socket.receive(receiveBuffer);
      if (len < 0) {
        continue;
      }
      for (NetlinkMessage m : NetlinkMessage.parse(receiveBuffer, len)) {
        if (m.seq() != s) {
          continue; // a stale answer to an earlier, abandoned request
        }
        if (m.type() == (NFNL_SUBSYS_NFTABLES << 8 | NFT_MSG_NEWGEN)) {
          generation = decodeGeneration(m.payload());
        } else if (m.type() == NLMSG_ERROR) {
          int errno = m.errorCode();
          if (errno != 0) {
            throw NetlinkException.fromErrno(errno, "read the nftables generation (NFT_MSG_GETGEN)",
                thread.describe(), m.extendedAckMessage());
          }
          if (generation < 0) {
            throw new NetlinkException(0, "read the nftables generation in " + thread.describe()
                + ": acknowledged without an NFT_MSG_NEWGEN answer");
          }
          return generation;
        }
      }
    }
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
