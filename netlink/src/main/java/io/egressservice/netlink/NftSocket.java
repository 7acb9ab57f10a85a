package io.egressservice.netlink;

import static io.egressservice.netlink.NetlinkConstants.*;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * One NETLINK_NETFILTER socket for nf_tables requests and dumps, the transport {@link NftGeneration}, {@link
 * NftCounters} and {@link NftSetElements} share: opened with extended and capped ACKs and a receive timeout, one
 * send and one receive buffer reused for every exchange, sequence numbers that tell this exchange's answers from
 * the leftovers of an abandoned one.
 *
 * <p>The receive buffer is bounded: the kernel fills each dump datagram up to the largest read it has seen from
 * the socket, capped at 32 KiB, so 64 KiB holds any datagram; a larger one would be reported (MSG_TRUNC), never
 * cut. A dump is consumed datagram by datagram and each message is handed over while it is in the buffer, so the
 * memory of a dump is this buffer whatever the number of objects.
 *
 * <p>Not thread safe: used on its namespace's {@link NetnsThread}, under its owner's lock.
 */
final class NftSocket implements AutoCloseable {
  /** {@code NETLINK_NETFILTER} in {@code <linux/netlink.h>}. */
  static final int NETLINK_NETFILTER = 12;
  /** {@code NFNL_SUBSYS_NFTABLES} in {@code <linux/netfilter/nfnetlink.h>}. */
  static final int NFNL_SUBSYS_NFTABLES = 10;
  static final int NFNETLINK_V0 = 0;
  /** {@code struct nfgenmsg}: u8 family, u8 version, be16 res_id. */
  static final int NFGENMSG_LEN = 4;
  static final int RECEIVE_TIMEOUT_MILLIS = 2000;
  static final int RECEIVE_BYTES = 64 * 1024;
  /** Dumps interrupted by a change of the ruleset before giving up. */
  static final int DUMP_ATTEMPTS = 5;
  /** The type of a comment among libnftnl's user-data TLVs. */
  static final int UDATA_COMMENT = 0;

  /** What the socket does with datagrams: a {@link NetlinkSocket}, or recorded bytes in tests. */
  interface Datagrams {
    void send(ByteBuffer direct, int length);

    /** One datagram into {@code direct}: its length, or -1 when the receive timeout expired. */
    int receive(ByteBuffer direct);

    void close();
  }

  /** Writes one request with the given sequence number. */
  interface Encoder {
    void encode(NetlinkMessageWriter w, int seq);
  }

  /** How an exchange ended. */
  enum Outcome {
    /** Acknowledged, or the dump reached NLMSG_DONE untouched. */
    COMPLETE,
    /** The kernel answered ENOENT: no such table, set, ... */
    ABSENT,
    /**
     * A dump the kernel marked NLM_F_DUMP_INTR, or whose answers carry two ruleset generations: what it delivered
     * may mix two rulesets.
     */
    INTERRUPTED
  }

  private final Datagrams io;
  private final String where;
  private final ByteBuffer sendBuffer = ByteBuffer.allocateDirect(512);
  private final ByteBuffer receiveBuffer = ByteBuffer.allocateDirect(RECEIVE_BYTES).order(ByteOrder.nativeOrder());
  private final NetlinkMessageWriter writer = new NetlinkMessageWriter(sendBuffer);
  private int seq = (int) (System.nanoTime() & 0x3fffffff);
  /** Datagrams received, for tests that a dump is handed over while it arrives. */
  private long datagrams;

  NftSocket(Datagrams io, String where) {
    this.io = io;
    this.where = where;
  }

  /**
   * Opens the socket in the namespace of {@code thread} (created there, used from there).
   *
   * @throws NetlinkException when it cannot be created (no netfilter netlink, ...)
   */
  static NftSocket open(NetnsThread thread) {
    NetlinkSocket s = thread.call(() -> {
      NetlinkSocket sock = NetlinkSocket.open(NETLINK_NETFILTER, 0, thread.describe());
      try {
        sock.setOption(SOL_NETLINK, NETLINK_EXT_ACK, 1);
        sock.setOption(SOL_NETLINK, NETLINK_CAP_ACK, 1);
        sock.setReceiveTimeoutMillis(RECEIVE_TIMEOUT_MILLIS);
        return sock;
      } catch (RuntimeException e) {
        sock.close();
        throw e;
      }
    });
    return new NftSocket(new Datagrams() {
      @Override
      public void send(ByteBuffer direct, int length) {
        s.send(direct, length);
      }

      @Override
      public int receive(ByteBuffer direct) {
        return s.receive(direct);
      }

      @Override
      public void close() {
        s.close();
      }
    }, thread.describe());
  }

  /** The nfgenmsg family of an nftables family name ("inet", "ip", "ip6", ...). */
  static int family(String family) {
    return switch (family) {
      case "inet" -> 1;
      case "ip" -> 2;
      case "arp" -> 3;
      case "netdev" -> 5;
      case "bridge" -> 7;
      case "ip6" -> 10;
      default -> throw new IllegalArgumentException("not an nftables family: " + family);
    };
  }

  /**
   * The comment among libnftnl's user-data TLVs (type u8, length u8, value), without its NUL: type 0 for objects
   * (NFTNL_UDATA_OBJ_COMMENT) and set elements (NFTNL_UDATA_SET_ELEM_COMMENT) alike.
   */
  static Optional<String> comment(byte[] udata) {
    int pos = 0;
    while (pos + 2 <= udata.length) {
      int type = udata[pos] & 0xff;
      int len = udata[pos + 1] & 0xff;
      if (pos + 2 + len > udata.length) {
        return Optional.empty();
      }
      if (type == UDATA_COMMENT) {
        int n = 0;
        while (n < len && udata[pos + 2 + n] != 0) {
          n++;
        }
        return Optional.of(new String(udata, pos + 2, n, StandardCharsets.UTF_8));
      }
      pos += 2 + len;
    }
    return Optional.empty();
  }

  /** The message type of an nf_tables message: {@code NFNL_SUBSYS_NFTABLES << 8 | msg}. */
  static int type(int nftMessage) {
    return NFNL_SUBSYS_NFTABLES << 8 | nftMessage;
  }

  /**
   * Sends one request with NLM_F_ACK (which {@code encode} sets) and passes each answer of its sequence number to
   * {@code answers} until the acknowledgement.
   *
   * @return COMPLETE, or ABSENT when the kernel answered ENOENT
   * @throws NetlinkException with the kernel's errno and explanation for any other error, or on no answer within
   *     the receive timeout
   */
  Outcome request(String op, Encoder encode, Consumer<NetlinkMessage> answers) {
    return exchange(op, encode, false, answers);
  }

  /**
   * Runs a dump until one attempt is not interrupted, at most {@link #DUMP_ATTEMPTS}: each attempt accumulates
   * its answers into a fresh container from {@code fresh}, and an interrupted attempt's container is dropped.
   *
   * @return the container of the complete attempt, or empty when the kernel answered ENOENT
   * @throws NetlinkException for a kernel error, no answer within the receive timeout, or a ruleset that kept
   *     changing (EINTR)
   */
  <A> Optional<A> dump(String op, Encoder encode, Supplier<A> fresh, BiConsumer<A, NetlinkMessage> accumulate) {
    for (int attempt = 1; attempt <= DUMP_ATTEMPTS; attempt++) {
      A container = fresh.get();
      Outcome outcome = exchange(op, encode, true, m -> accumulate.accept(container, m));
      if (outcome == Outcome.COMPLETE) {
        return Optional.of(container);
      }
      if (outcome == Outcome.ABSENT) {
        return Optional.empty();
      }
    }
    throw new NetlinkException(NetlinkSocket.EINTR, op + " in " + where + ": the ruleset kept changing during "
        + DUMP_ATTEMPTS + " dumps (each saw a commit)", op);
  }

  /**
   * One exchange. A dump is interrupted when the kernel marks it NLM_F_DUMP_INTR or when its answers were filled
   * at two ruleset generations; the answers from then on are not handed over: that attempt is void, it is only read
   * to its end. If {@code answers} throws, the rest of the dump is read and dropped before the exception goes on, so
   * the socket's next dump does not meet this one still running (EBUSY).
   */
  private Outcome exchange(String op, Encoder encode, boolean dump, Consumer<NetlinkMessage> answers) {
    writer.clear();
    int s = ++seq;
    encode.encode(writer, s);
    io.send(sendBuffer, writer.position());
    boolean interrupted = false;
    int firstGeneration = -1;
    boolean ended = false; // this exchange's last message was read (or nothing more will come)
    try {
      while (true) {
        int len = io.receive(receiveBuffer);
        if (len < 0) {
          ended = true;
          throw new NetlinkException(0, op + " in " + where + ": no answer within " + RECEIVE_TIMEOUT_MILLIS + " ms");
        }
        datagrams++;
        for (NetlinkMessage m : NetlinkMessage.parse(receiveBuffer, len)) {
          if (m.seq() != s) {
            continue; // a leftover of an earlier, abandoned exchange
          }
          if ((m.flags() & NLM_F_DUMP_INTR) != 0) {
            interrupted = true;
          }
          if (m.type() == NLMSG_DONE) {
            ended = true;
            // The dump's own status: an error the kernel met after the dump had begun.
            int err = m.payload().limit() >= 4 ? -m.payload().getInt(0) : 0;
            if (err == NetlinkSocket.EINTR) {
              interrupted = true;
            } else if (err != 0) {
              throw NetlinkException.fromErrno(err, op, where, m.extendedAckMessage());
            }
            return interrupted ? Outcome.INTERRUPTED : Outcome.COMPLETE;
          }
          if (m.type() == NLMSG_ERROR) {
            int errno = m.errorCode();
            ended = !dump || errno != 0;
            if (errno == NetlinkException.ENOENT) {
              return Outcome.ABSENT;
            }
            if (errno != 0) {
              throw NetlinkException.fromErrno(errno, op, where, m.extendedAckMessage());
            }
            if (!dump) {
              return Outcome.COMPLETE;
            }
            continue;
          }
          if (dump && m.payload().limit() >= NFGENMSG_LEN) {
            // nfgenmsg.res_id: the low 16 bits of the ruleset generation when the kernel filled this message
            // (big-endian). Set element dumps are never marked NLM_F_DUMP_INTR (nf_tables_dump_set does not call
            // nl_dump_check_consistent), and they resume by counting elements, so a commit between two datagrams
            // can skip or repeat elements: a change of generation is the only sign of it.
            int generation = Short.toUnsignedInt(m.payload().duplicate().order(ByteOrder.BIG_ENDIAN).getShort(2));
            if (firstGeneration < 0) {
              firstGeneration = generation;
            } else if (generation != firstGeneration) {
              interrupted = true;
            }
          }
          if (!interrupted) {
            answers.accept(m);
          }
        }
      }
    } catch (RuntimeException e) {
      if (dump && !ended) {
        drain(s, e);
      }
      throw e;
    }
  }

  long datagrams() {
    return datagrams;
  }

  /** Reads the rest of dump {@code s} after a failure, so the kernel is not left with a running dump. */
  private void drain(int s, RuntimeException failure) {
    try {
      while (true) {
        int len = io.receive(receiveBuffer);
        if (len < 0) {
          return;
        }
        for (NetlinkMessage m : NetlinkMessage.parse(receiveBuffer, len)) {
          if (m.seq() == s && (m.type() == NLMSG_DONE || m.type() == NLMSG_ERROR)) {
            return;
          }
        }
      }
    } catch (RuntimeException e) {
      failure.addSuppressed(e);
    }
  }

  @Override
  public void close() {
    io.close();
  }
}
