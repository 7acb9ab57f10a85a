package io.egressservice.netlink;

import io.egressservice.ip.IpPrefix;
import io.egressservice.testing.Netns;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;

/** What the conntrack tests do to a test namespace: make it track flows, and start flows in it. */
final class ConntrackNamespace {
  private ConntrackNamespace() {}

  /** A table with a ct expression makes the namespace track connections (locally sent datagrams included). */
  static void trackConnections(Netns ns) {
    ns.exec("nft", "add table inet ct_test; add chain inet ct_test out { type filter hook output priority 0; };"
        + " add rule inet ct_test out ct state new counter");
  }

  /** One UDP datagram from {@code from} (any port) to port 9 of {@code to}; call on a thread in the namespace. */
  static void send(IpPrefix from, String to) throws Exception {
    try (DatagramSocket s = new DatagramSocket(new InetSocketAddress(InetAddress.getByName(from.addressText()), 0))) {
      byte[] b = {1};
      s.send(new DatagramPacket(b, 1, InetAddress.getByName(to), 9));
    }
  }
}
