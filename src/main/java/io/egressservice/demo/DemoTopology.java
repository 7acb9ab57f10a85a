package io.egressservice.demo;

import io.egressservice.netlink.NetnsThread;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The demo's little network, all in throwaway namespaces:
 *
 * <pre>
 *  pod 10.128.0.5 --veth-- node --uplink-1 (198.51.100.0/30)--> up1  owns 203.0.113.10 (external host)
 *                              \-uplink-2 (198.51.100.4/30)--> up2  owns 203.0.113.10 too
 * </pre>
 *
 * The node's main table leaves through uplink 1; table 100 through uplink 2. Both upstreams own the
 * same external address, so the one that answers tells which uplink a packet took, and its UDP echo
 * says which source address it saw.
 */
final class DemoTopology implements AutoCloseable {
  static final String POD_IP = "10.128.0.5";
  static final String EXTERNAL = "203.0.113.10";
  static final int PORT = 7777;

  final String pod;
  final String node;
  final String up1;
  final String up2;
  private final List<String> created = new ArrayList<>();
  private final List<NetnsThread> threads = new ArrayList<>();
  private final List<DatagramSocket> servers = new ArrayList<>();

  DemoTopology() {
    String suffix = Integer.toHexString(ThreadLocalRandom.current().nextInt(1 << 16));
    pod = "esa-demo-pod-" + suffix;
    node = "esa-demo-node-" + suffix;
    up1 = "esa-demo-up1-" + suffix;
    up2 = "esa-demo-up2-" + suffix;
  }

  void build() {
    for (String ns : List.of(pod, node, up1, up2)) {
      Shell.run("ip", "netns", "add", ns);
      created.add(ns);
      Shell.in(ns, "ip", "link", "set", "lo", "up");
    }
    veth(pod, "eth0", "10.128.0.5/24", node, "pod1", "10.128.0.1/24");
    veth(node, "uplink1", "198.51.100.1/30", up1, "tonode", "198.51.100.2/30");
    veth(node, "uplink2", "198.51.100.5/30", up2, "tonode", "198.51.100.6/30");
    Shell.in(pod, "ip", "route", "add", "default", "via", "10.128.0.1");
    for (String sysctl : List.of("net.ipv4.ip_forward=1", "net.ipv4.conf.all.rp_filter=0",
        "net.ipv4.conf.default.rp_filter=0", "net.ipv4.conf.uplink1.rp_filter=0", "net.ipv4.conf.uplink2.rp_filter=0")) {
      Shell.in(node, "sysctl", "-q", "-w", sysctl);
    }
    Shell.in(node, "ip", "route", "add", "default", "via", "198.51.100.2");
    Shell.in(node, "ip", "route", "add", "default", "via", "198.51.100.6", "table", "100");
    for (String up : List.of(up1, up2)) {
      Shell.in(up, "ip", "addr", "add", EXTERNAL + "/32", "dev", "lo");
      Shell.in(up, "ip", "route", "add", "10.128.0.0/16", "via", up.equals(up1) ? "198.51.100.1" : "198.51.100.5");
      Shell.in(up, "ip", "route", "add", "5.5.5.0/24", "via", up.equals(up1) ? "198.51.100.1" : "198.51.100.5");
    }
    startEcho(up1, "uplink-1");
    startEcho(up2, "uplink-2");
  }

  private static void veth(String nsA, String ifA, String addrA, String nsB, String ifB, String addrB) {
    Shell.in(nsA, "ip", "link", "add", ifA, "type", "veth", "peer", "name", ifB, "netns", nsB);
    Shell.in(nsA, "ip", "addr", "add", addrA, "dev", ifA);
    Shell.in(nsB, "ip", "addr", "add", addrB, "dev", ifB);
    Shell.in(nsA, "ip", "link", "set", ifA, "up");
    Shell.in(nsB, "ip", "link", "set", ifB, "up");
  }

  /** A UDP echo in {@code ns} that answers "&lt;uplink&gt; saw &lt;source&gt;"; its socket lives in that namespace. */
  private void startEcho(String ns, String uplink) {
    NetnsThread thread = NetnsThread.enter(Optional.of(ns));
    threads.add(thread);
    DatagramSocket socket = thread.call(() -> new DatagramSocket(new InetSocketAddress(EXTERNAL, PORT)));
    servers.add(socket);
    Thread server = new Thread(() -> {
      byte[] buf = new byte[512];
      while (!socket.isClosed()) {
        try {
          DatagramPacket in = new DatagramPacket(buf, buf.length);
          socket.receive(in);
          byte[] answer = (uplink + " saw " + in.getAddress().getHostAddress()).getBytes(StandardCharsets.UTF_8);
          socket.send(new DatagramPacket(answer, answer.length, in.getSocketAddress()));
        } catch (java.io.IOException e) {
          return;
        }
      }
    }, "echo-" + uplink);
    server.setDaemon(true);
    server.start();
  }

  /** Sends one UDP datagram from the pod to the external host; returns what the external side saw. */
  String probeFromPod() {
    NetnsThread thread = NetnsThread.enter(Optional.of(pod));
    try {
      return thread.call(() -> {
        try (DatagramSocket s = new DatagramSocket()) {
          s.setSoTimeout(700);
          byte[] hello = "hello".getBytes(StandardCharsets.UTF_8);
          for (int attempt = 0; attempt < 3; attempt++) {
            s.send(new DatagramPacket(hello, hello.length, InetAddress.getByName(EXTERNAL), PORT));
            try {
              byte[] buf = new byte[512];
              DatagramPacket reply = new DatagramPacket(buf, buf.length);
              s.receive(reply);
              return new String(buf, 0, reply.getLength(), StandardCharsets.UTF_8);
            } catch (SocketTimeoutException e) {
              // try again: the first packet may race a rule being installed
            }
          }
          return "no answer (3 datagrams, 0.7 s each)";
        }
      });
    } finally {
      thread.close();
    }
  }

  @Override
  public void close() {
    servers.forEach(DatagramSocket::close);
    threads.forEach(NetnsThread::close);
    for (String ns : created) {
      Shell.quietly(List.of("ip", "netns", "del", ns));
    }
    created.clear();
  }
}
