package io.egressservice.netlink;

import com.sun.jna.LastErrorException;
import com.sun.jna.Native;
import com.sun.jna.Platform;
import com.sun.jna.Pointer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A raw AF_NETLINK socket, the only class that touches JNA. Methods are plain system calls; the
 * caller decides on which thread (and so in which network namespace, see {@link NetnsThread}) the
 * socket is created. Not thread safe.
 *
 * <p>Native calls use JNA direct mapping (cheaper per call than interface mapping, which matters for
 * a batch of thousands of acknowledgements). {@code size_t}/{@code ssize_t} are mapped to Java
 * {@code long}, which is right on the LP64 platforms the agent runs on (amd64, arm64).
 */
final class NetlinkSocket implements AutoCloseable {
  private static final int SOCK_RAW = 3;
  private static final int SOCK_CLOEXEC = 0x80000;
  private static final int SOL_SOCKET = 1;
  private static final int SO_SNDBUF = 7;
  private static final int SO_RCVBUF = 8;
  private static final int SO_RCVTIMEO = 20;
  private static final int SO_SNDBUFFORCE = 32;
  private static final int SO_RCVBUFFORCE = 33;
  private static final int MSG_TRUNC = 0x20;
  static final int EINTR = 4;
  static final int EAGAIN = 11;
  static final int ENOBUFS = 105;

  /** The C library, direct-mapped. */
  private static final class C {
    static {
      Native.register(C.class, Platform.C_LIBRARY_NAME);
    }

    static native int socket(int domain, int type, int protocol) throws LastErrorException;

    static native int bind(int fd, byte[] addr, int len) throws LastErrorException;

    static native int getsockname(int fd, byte[] addr, int[] len) throws LastErrorException;

    static native int setsockopt(int fd, int level, int name, byte[] value, int len) throws LastErrorException;

    static native int getsockopt(int fd, int level, int name, byte[] value, int[] len) throws LastErrorException;

    static native long send(int fd, Pointer buf, long len, int flags) throws LastErrorException;

    static native long recv(int fd, Pointer buf, long len, int flags) throws LastErrorException;

    static native int close(int fd);
  }

  private final int fd;
  private final String where;
  private final int portId;
  private boolean closed;

  private NetlinkSocket(int fd, String where, int portId) {
    this.fd = fd;
    this.where = where;
    this.portId = portId;
  }

  /**
   * {@code socket(AF_NETLINK, SOCK_RAW|SOCK_CLOEXEC, protocol)} bound to a kernel-chosen port id and
   * the multicast groups in {@code groupMask} (0 for a request socket).
   */
  static NetlinkSocket open(int protocol, int groupMask, String where) {
    int fd;
    try {
      fd = C.socket(NetlinkConstants.AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, protocol);
    } catch (LastErrorException e) {
      throw NetlinkException.fromErrno(e.getErrorCode(), "open a netlink socket", where);
    }
    try {
      byte[] addr = sockaddr(groupMask);
      C.bind(fd, addr, addr.length);
      int[] len = {addr.length};
      C.getsockname(fd, addr, len);
      int port = ByteBuffer.wrap(addr).order(ByteOrder.nativeOrder()).getInt(4);
      return new NetlinkSocket(fd, where, port);
    } catch (LastErrorException e) {
      C.close(fd);
      throw NetlinkException.fromErrno(e.getErrorCode(), "bind a netlink socket", where);
    }
  }

  /** {@code struct sockaddr_nl}: u16 family, u16 pad, u32 pid, u32 groups. */
  private static byte[] sockaddr(int groups) {
    ByteBuffer b = ByteBuffer.allocate(12).order(ByteOrder.nativeOrder());
    b.putShort((short) NetlinkConstants.AF_NETLINK).putShort((short) 0).putInt(0).putInt(groups);
    return b.array();
  }

  int portId() {
    return portId;
  }

  private static byte[] intBytes(int v) {
    return ByteBuffer.allocate(4).order(ByteOrder.nativeOrder()).putInt(v).array();
  }

  /** Sets an int socket option; false if the kernel refused it. */
  boolean setOption(int level, int name, int value) {
    try {
      C.setsockopt(fd, level, name, intBytes(value), 4);
      return true;
    } catch (LastErrorException e) {
      return false;
    }
  }

  private int getIntOption(int level, int name) {
    byte[] v = new byte[4];
    int[] len = {4};
    try {
      C.getsockopt(fd, level, name, v, len);
    } catch (LastErrorException e) {
      return 0;
    }
    return ByteBuffer.wrap(v).order(ByteOrder.nativeOrder()).getInt();
  }

  /**
   * Asks for {@code bytes} of send and receive buffer: SO_*BUFFORCE first (allowed with
   * CAP_NET_ADMIN, ignores net.core.rmem_max), then the plain option, capped by rmem_max/wmem_max.
   */
  void setBufferSizes(int bytes) {
    if (!setOption(SOL_SOCKET, SO_RCVBUFFORCE, bytes)) {
      setOption(SOL_SOCKET, SO_RCVBUF, bytes);
    }
    if (!setOption(SOL_SOCKET, SO_SNDBUFFORCE, bytes)) {
      setOption(SOL_SOCKET, SO_SNDBUF, bytes);
    }
  }

  /** The receive buffer the kernel granted (it doubles the requested value for bookkeeping). */
  int receiveBufferSize() {
    return getIntOption(SOL_SOCKET, SO_RCVBUF);
  }

  int sendBufferSize() {
    return getIntOption(SOL_SOCKET, SO_SNDBUF);
  }

  /** SO_RCVTIMEO, so a blocked receive returns (empty) and a listener loop can notice it is closed. */
  void setReceiveTimeoutMillis(int millis) {
    ByteBuffer tv = ByteBuffer.allocate(16).order(ByteOrder.nativeOrder());
    tv.putLong(millis / 1000).putLong((millis % 1000) * 1000L);
    try {
      C.setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, tv.array(), 16);
    } catch (LastErrorException e) {
      throw NetlinkException.fromErrno(e.getErrorCode(), "set SO_RCVTIMEO on a netlink socket", where);
    }
  }

  /** Sends {@code length} bytes from the start of a direct buffer as one datagram. */
  void send(ByteBuffer direct, int length) {
    Pointer p = Native.getDirectBufferPointer(direct);
    while (true) {
      try {
        long sent = C.send(fd, p, length, 0);
        if (sent != length) {
          throw new NetlinkException(0, "short netlink send in " + where + ": " + sent + " of " + length + " bytes");
        }
        return;
      } catch (LastErrorException e) {
        if (e.getErrorCode() != EINTR) {
          throw NetlinkException.fromErrno(e.getErrorCode(), "send " + length + " bytes on a netlink socket", where);
        }
      }
    }
  }

  /**
   * Receives one datagram into a direct buffer; returns its length, or -1 when SO_RCVTIMEO
   * expired. ENOBUFS (the receive queue overflowed and messages were lost) is thrown as a
   * NetlinkException with that errno.
   */
  int receive(ByteBuffer direct) {
    Pointer p = Native.getDirectBufferPointer(direct);
    while (true) {
      try {
        long n = C.recv(fd, p, direct.capacity(), MSG_TRUNC);
        if (n > direct.capacity()) {
          throw new NetlinkException(0, "netlink message of " + n + " bytes does not fit the " + direct.capacity()
              + "-byte receive buffer in " + where);
        }
        return (int) n;
      } catch (LastErrorException e) {
        int errno = e.getErrorCode();
        if (errno == EINTR) {
          continue;
        }
        if (errno == EAGAIN) {
          return -1;
        }
        if (errno == ENOBUFS) {
          throw new NetlinkException(ENOBUFS,
              "netlink receive queue overflowed in " + where + " (ENOBUFS): messages were lost");
        }
        throw NetlinkException.fromErrno(errno, "receive from a netlink socket", where);
      }
    }
  }

  @Override
  public void close() {
    if (!closed) {
      closed = true;
      C.close(fd);
    }
  }
}
