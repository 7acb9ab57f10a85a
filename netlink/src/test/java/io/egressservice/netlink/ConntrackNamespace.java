package io.egressservice.netlink;

import io.egressservice.ip.IpPrefix;
import io.egressservice.testing.Netns;
import io.egressservice.testing.NetnsFixture;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.List;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The fixture of the conntrack tests ({@code @RegisterExtension}): per test the shared {@link NetnsFixture}'s
 * namespace and thread (skipped without root), made to track connections, with what the tests do in it: put
 * addresses on lo, start flows, read the kernel's table.
 */
final class ConntrackNamespace implements BeforeEachCallback, AfterEachCallback {
  /** The table whose chain {@code out} (filter, output hook) tracks every locally sent packet. */
  static final String TABLE = "ct_test";

  private final NetnsFixture kernel;

  ConntrackNamespace(String prefix) {
    this.kernel = new NetnsFixture(prefix);
  }

  @Override
  public void beforeEach(ExtensionContext context) {
    kernel.beforeEach(context);
    kernel.thread();
    // A table with a ct expression makes the namespace track connections (locally sent datagrams included).
    kernel.ns().exec("nft", "add table inet " + TABLE + "; add chain inet " + TABLE
        + " out { type filter hook output priority 0; }; add rule inet " + TABLE + " out ct state new counter");
  }

  Netns ns() {
    return kernel.ns();
  }

  /** The thread in the namespace, which {@link Conntrack} is given. */
  NetnsThread thread() {
    return kernel.thread();
  }

  /** Puts host addresses ({@code /32}, or {@code /128} without duplicate address detection) on lo. */
  void onLoopback(String... addresses) {
    for (String a : addresses) {
      if (a.contains(":")) {
        kernel.ns().exec("ip", "addr", "add", a + "/128", "dev", "lo", "nodad");
      } else {
        kernel.ns().exec("ip", "addr", "add", a + "/32", "dev", "lo");
      }
    }
  }

  /** The lines of the namespace's {@code /proc/net/nf_conntrack}, one tracked flow each. */
  List<String> tracked() {
    return kernel.ns().exec("cat", "/proc/net/nf_conntrack").lines().toList();
  }

  /** One UDP datagram from {@code from} (any port) to port 9 of {@code to}; call on a thread in the namespace. */
  static void send(IpPrefix from, String to) throws Exception {
    try (DatagramSocket s = new DatagramSocket(new InetSocketAddress(InetAddress.getByName(from.addressText()), 0))) {
      byte[] b = {1};
      s.send(new DatagramPacket(b, 1, InetAddress.getByName(to), 9));
    }
  }

  @Override
  public void afterEach(ExtensionContext context) throws Exception {
    kernel.afterEach(context);
  }
}
