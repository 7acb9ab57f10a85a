package io.egressservice.netlink;

import static io.egressservice.netlink.NetlinkConstants.*;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.IntConsumer;

/**
 * The socket core of one {@link RtNetlink} connection: its NETLINK_ROUTE socket, buffers and sequence numbers,
 * and the three exchanges every operation is made of (one acknowledged request, a dump to NLMSG_DONE, a batch of
 * acknowledged requests). Kept apart from the operations so that what a rule, route or link request means is
 * not mixed with how requests travel; every exchange runs on the connection's {@link NetnsThread}.
 */
final class NetlinkChannel {
  private static final System.Logger LOG = System.getLogger(RtNetlink.class.getName());
  /** Requested SO_RCVBUF / SO_SNDBUF; the kernel doubles it for its bookkeeping. */
  static final int SOCKET_BUFFER_BYTES = 4 << 20;
  /**
   * One received datagram: the kernel sends dumps in skbs of at most 32 KiB (it caps its record of
   * our largest read there), notifications and ACKs are one message each, so twice that is ample; a
   * larger datagram would be reported (MSG_TRUNC), never silently cut. Each socket's buffer is
   * direct memory that stays resident, hence not the megabyte it once was.
   */
  static final int RECEIVE_BYTES = 64 * 1024;
  /** Batch chunk size in bytes (also capped by SO_SNDBUF). */
  private static final int SEND_BYTES = 1 << 20;
  /**
   * Receive-queue memory one acknowledgement takes (skb truesize, conservatively): a chunk must not
   * produce more ACKs than the receive buffer holds, or the kernel drops them (ENOBUFS).
   */
  private static final int ACK_TRUESIZE = 2048;
  private static final int DUMP_ATTEMPTS = 5;

  private final NetnsThread thread;
  private final NetlinkSocket socket;
  private final ByteBuffer sendBuffer;
  private final ByteBuffer receiveBuffer;
  private final NetlinkMessageWriter writer;
  private final int maxMessagesPerChunk;
  private final int maxChunkBytes;
  /** Opened on first use: a socket with strict checking, whose dumps the kernel filters (see {@link #dumpFiltered}). */
  private NetlinkSocket filteringSocket;
  private int seq;
  private boolean closed;
  private final AtomicLong dumps = new AtomicLong();

  NetlinkChannel(NetnsThread thread) {
    this.thread = thread;
    this.socket = thread.call(() -> openSocket(0, thread.describe()));
    this.sendBuffer = ByteBuffer.allocateDirect(SEND_BYTES);
    this.receiveBuffer = ByteBuffer.allocateDirect(RECEIVE_BYTES).order(java.nio.ByteOrder.nativeOrder());
    this.writer = new NetlinkMessageWriter(sendBuffer);
    int rcv = Math.max(socket.receiveBufferSize(), 64 * 1024);
    int snd = Math.max(socket.sendBufferSize(), 64 * 1024);
    this.maxMessagesPerChunk = Math.max(16, rcv / ACK_TRUESIZE);
    this.maxChunkBytes = Math.min(SEND_BYTES, snd - 32);
    this.seq = (int) (System.nanoTime() & 0x3fffffff);
  }

  /** A NETLINK_ROUTE socket bound to {@code groups}, opened on the calling (namespace) thread. */
  static NetlinkSocket openSocket(int groups, String where) {
    NetlinkSocket s = NetlinkSocket.open(NETLINK_ROUTE, groups, where);
    s.setBufferSizes(SOCKET_BUFFER_BYTES);
    // Extended ACKs: the kernel explains EINVAL and friends in text. Capped ACKs: an error echoes only
    // the request's header, not the whole request. Both are optional; old kernels ignore them.
    s.setOption(SOL_NETLINK, NETLINK_EXT_ACK, 1);
    s.setOption(SOL_NETLINK, NETLINK_CAP_ACK, 1);
    return s;
  }

  NetnsThread thread() {
    return thread;
  }

  /** Where the encode callbacks write their request; only used on the namespace's thread. */
  NetlinkMessageWriter writer() {
    return writer;
  }

  String describe() {
    return thread.describe();
  }

  long dumpRequests() {
    return dumps.get();
  }

  boolean isClosed() {
    return closed;
  }

  /** Sequence numbers simply wrap; differences are computed in int arithmetic, so they stay right. */
  private int nextSeq() {
    return ++seq;
  }

  void checkOpen() {
    if (closed) {
      throw new IllegalStateException("netlink connection to " + describe() + " is closed");
    }
  }

  /** Sends one request with NLM_F_ACK and waits for its acknowledgement, throwing its error. */
  void request(String op, IntConsumer encode) {
    thread.call(() -> {
      checkOpen();
      writer.clear();
      int s = nextSeq();
      encode.accept(s);
      socket.send(sendBuffer, writer.position());
      while (true) {
        int len = socket.receive(receiveBuffer);
        for (NetlinkMessage m : NetlinkMessage.parse(receiveBuffer, len)) {
          if (m.seq() == s && m.type() == NLMSG_ERROR) {
            int errno = m.errorCode();
            if (errno == 0) {
              return null;
            }
            throw NetlinkException.fromErrno(errno, op, describe(), m.extendedAckMessage());
          }
        }
      }
    });
  }

  /** Runs a dump (NLM_F_DUMP) to NLMSG_DONE, retrying it when the kernel marks it interrupted. */
  <T> List<T> dump(String op, IntConsumer encode, Function<NetlinkMessage, Optional<T>> decode) {
    return thread.call(() -> {
      checkOpen();
      return dumpOn(socket, op, encode, decode);
    });
  }

  /**
   * As {@link #dump}, on a socket of its own with strict checking (NETLINK_GET_STRICT_CHK), so that the kernel
   * applies the request's filters (since Linux 4.20) and no other request is judged strictly.
   */
  <T> List<T> dumpFiltered(String op, IntConsumer encode, Function<NetlinkMessage, Optional<T>> decode) {
    return thread.call(() -> {
      checkOpen();
      if (filteringSocket == null) {
        NetlinkSocket s = openSocket(0, thread.describe());
        s.setOption(SOL_NETLINK, NETLINK_GET_STRICT_CHK, 1);
        filteringSocket = s;
      }
      return dumpOn(filteringSocket, op, encode, decode);
    });
  }

  /** {@link #dump} on the given socket; on the namespace's thread. */
  private <T> List<T> dumpOn(NetlinkSocket socket, String op, IntConsumer encode,
      Function<NetlinkMessage, Optional<T>> decode) {
    dumps.incrementAndGet();
    for (int attempt = 1; attempt <= DUMP_ATTEMPTS; attempt++) {
      writer.clear();
      int s = nextSeq();
      encode.accept(s);
      socket.send(sendBuffer, writer.position());
      List<T> out = new ArrayList<>();
      boolean interrupted = false;
      boolean done = false;
      while (!done) {
        int len = socket.receive(receiveBuffer);
        for (NetlinkMessage m : NetlinkMessage.parse(receiveBuffer, len)) {
          if (m.seq() != s) {
            continue;
          }
          if ((m.flags() & NLM_F_DUMP_INTR) != 0) {
            interrupted = true;
          }
          if (m.type() == NLMSG_DONE) {
            int err = m.payload().limit() >= 4 ? -m.payload().getInt(0) : 0;
            if (err == NetlinkSocket.EINTR) {
              interrupted = true;
            } else if (err != 0) {
              throw NetlinkException.fromErrno(err, op, describe());
            }
            done = true;
            break;
          }
          if (m.type() == NLMSG_ERROR) {
            int errno = m.errorCode();
            if (errno != 0) {
              throw NetlinkException.fromErrno(errno, op, describe(), m.extendedAckMessage());
            }
            continue;
          }
          decode.apply(m).ifPresent(out::add);
        }
      }
      if (!interrupted) {
        return out;
      }
      LOG.log(System.Logger.Level.DEBUG, "{0} in {1}: dump interrupted, retrying ({2})", op, describe(), attempt);
    }
    throw new NetlinkException(NetlinkSocket.EINTR,
        op + " in " + describe() + ": the dump was interrupted " + DUMP_ATTEMPTS + " times (the kernel state kept changing)", op);
  }

  /** Encodes one request of a batch with the given sequence number into {@link #writer()}. */
  interface BatchEncoder<C> {
    void encode(C change, int seq);
  }

  /**
   * Sends {@code changes} in chunks of requests (each at most {@code maxMessage} bytes encoded) sized so their
   * acknowledgements fit the receive buffer, every one acknowledged; a failed request is reported with its
   * typed error and does not stop the others.
   */
  <C> BatchResult<C> batch(List<C> changes, int maxMessage, BatchEncoder<C> encoder, Function<C, String> describeChange) {
    return thread.call(() -> {
      NetlinkException[] errors = batchOnThread(changes, maxMessage, encoder, describeChange);
      List<C> ok = new ArrayList<>();
      List<BatchResult.Failure<C>> failed = new ArrayList<>();
      for (int k = 0; k < changes.size(); k++) {
        if (errors[k] == null) {
          ok.add(changes.get(k));
        } else {
          failed.add(new BatchResult.Failure<>(changes.get(k), errors[k]));
        }
      }
      return new BatchResult<>(ok, failed);
    });
  }

  /** Each request's error, null where it succeeded; on the namespace's thread. */
  private <C> NetlinkException[] batchOnThread(List<C> changes, int maxMessage, BatchEncoder<C> encoder,
      Function<C, String> describeChange) {
    checkOpen();
    int n = changes.size();
    NetlinkException[] errors = new NetlinkException[n];
    boolean[] answered = new boolean[n];
    int i = 0;
    while (i < n) {
      writer.clear();
      int first = i;
      int firstSeq = seq + 1;
      while (i < n && i - first < maxMessagesPerChunk && writer.position() + maxMessage <= maxChunkBytes) {
        encoder.encode(changes.get(i), nextSeq());
        i++;
      }
      int count = i - first;
      socket.send(sendBuffer, writer.position());
      int pending = count;
      try {
        while (pending > 0) {
          int len = socket.receive(receiveBuffer);
          // Fast path without allocation: an ACK is read in place; only an error is fully parsed.
          int off = 0;
          while (off + NLMSG_HDRLEN <= len) {
            int mlen = receiveBuffer.getInt(off);
            if (mlen < NLMSG_HDRLEN || off + mlen > len) {
              throw new IllegalArgumentException("malformed netlink message at offset " + off + ": length " + mlen);
            }
            int type = Short.toUnsignedInt(receiveBuffer.getShort(off + 4));
            int k = receiveBuffer.getInt(off + 8) - firstSeq;
            if (type == NLMSG_ERROR && mlen >= NLMSG_HDRLEN + 4 && k >= 0 && k < count && !answered[first + k]) {
              answered[first + k] = true;
              pending--;
              int errno = -receiveBuffer.getInt(off + NLMSG_HDRLEN);
              if (errno != 0) {
                NetlinkMessage m = NetlinkMessage.parse(receiveBuffer.slice(off, mlen), mlen).get(0);
                errors[first + k] = NetlinkException.fromErrno(
                    errno, describeChange.apply(changes.get(first + k)), describe(), m.extendedAckMessage());
              }
            }
            off += NetlinkMessageWriter.align(mlen);
          }
        }
      } catch (NetlinkException e) {
        if (e.errno() != NetlinkSocket.ENOBUFS) {
          throw e;
        }
        // Acknowledgements were dropped: the outcome of the unanswered requests is unknown.
        LOG.log(System.Logger.Level.WARNING, "lost netlink acknowledgements in {0}: {1}", describe(), e.getMessage());
        for (int k = first; k < i; k++) {
          if (!answered[k]) {
            answered[k] = true;
            String what = describeChange.apply(changes.get(k));
            errors[k] = new NetlinkException(NetlinkSocket.ENOBUFS, what + " in "
                + describe() + ": outcome unknown, the acknowledgement was lost (ENOBUFS); list again", what);
          }
        }
      }
    }
    return errors;
  }

  /** Closes both sockets, on the namespace's thread; the thread itself belongs to the caller. */
  void close() {
    thread.call(() -> {
      closed = true;
      socket.close();
      if (filteringSocket != null) {
        filteringSocket.close();
      }
      return null;
    });
  }
}
