package io.egressservice.netlink;

import java.nio.ByteBuffer;

/**
 * One ctnetlink conversation: requests out, datagrams in. The kernel's socket in production; a test stands a
 * different kernel in front of it (one that refuses a request form older kernels do not know).
 */
interface ConntrackChannel extends AutoCloseable {
  /** Sends the {@code length} bytes at the start of a direct buffer as one request. */
  void send(ByteBuffer direct, int length);

  /** Receives one datagram into a direct buffer; its length, or -1 when nothing came within the timeout. */
  int receive(ByteBuffer direct);

  @Override
  void close();

  /** A NETLINK_NETFILTER socket in the calling thread's namespace, 2 s to answer each receive. */
  static ConntrackChannel kernel(String where) {
    NetlinkSocket s = NetlinkSocket.open(12 /* NETLINK_NETFILTER */, 0, where);
    try {
      s.setReceiveTimeoutMillis(2000);
    } catch (RuntimeException e) {
      s.close();
      throw e;
    }
    return new ConntrackChannel() {
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
    };
  }
}
