package io.egressservice.cluster;

import io.egressservice.ip.IpFamily;
import io.egressservice.testbed.Namespace;
import java.util.ArrayList;
import java.util.List;

/**
 * An attacker's own VXLAN-GPE device in its namespace, speaking the agent's steering encapsulation: datagrams the
 * namespace sends to {@code destination} leave with the inner source {@code forged}, encapsulated (VNI 1, UDP
 * 4799) to {@code target}, as a node steering that source would send them. With {@code tunnel} false, the same
 * datagrams leave without encapsulation, routed to {@code target} as next hop: a plain spoofed source.
 *
 * <p>A rule {@code iif lo to <destination>} picks the route for the namespace's own packets only; where the
 * destination is an address of the namespace itself (an external router owns the external host's address), the
 * local table's rule is moved behind it for the forgery's lifetime. {@link #close()} undoes everything.
 */
final class Forgery implements AutoCloseable {
  static final String DEVICE = "gx";
  static final int TABLE = 4799;
  static final int PREF = 5;

  private final Namespace ns;
  private final List<String> undo = new ArrayList<>();
  /** The encapsulation's outer source ({@code " src <address>"}), or "" for the kernel's choice. */
  private String outerSource = "";

  private Forgery(Namespace ns) {
    this.ns = ns;
  }

  /** VXLAN-GPE to {@code target} with inner source {@code forged}, for packets to {@code destination}. */
  static Forgery tunnel(Namespace ns, String forged, String destination, String target) {
    return open(ns, forged, destination, target, true);
  }

  /**
   * As {@link #tunnel}, with a Node's address {@code outer} as the outer source: the address is borrowed on the
   * namespace's {@code lo} (so the kernel sends from it), never announced (IPv4: {@code arp_ignore} 1 answers no ARP
   * for it, {@code arp_announce} 2 asks with the namespace's own address; IPv6 answers and asks only for addresses on
   * the link): one-way datagrams, no ARP poisoning.
   */
  static Forgery tunnelFrom(Namespace ns, String outer, String forged, String destination, String target) {
    Forgery f = new Forgery(ns);
    try {
      boolean v6 = outer.contains(":");
      if (!v6) {
        for (String key : List.of("arp_ignore", "arp_announce")) {
          String sysctl = "net.ipv4.conf.all." + key;
          String was = ns.exec("sysctl", "-n", sysctl).trim();
          f.run("sysctl -qw " + sysctl + "=" + (key.equals("arp_ignore") ? 1 : 2));
          f.undo.add(0, "sysctl -qw " + sysctl + "=" + was);
        }
      }
      String host = outer + (v6 ? "/128" : "/32");
      f.run("ip addr add " + host + " dev lo" + (v6 ? " nodad" : ""));
      f.undo.add(0, "ip addr del " + host + " dev lo");
      f.outerSource = " src " + outer;
      f.setUp(forged, destination, target, true);
      return f;
    } catch (RuntimeException e) {
      f.close();
      throw e;
    }
  }

  /**
   * A node's own steering device ({@code egress-vx}, the agent's) used by a process on the node (a host-network pod
   * is the node) for packets to {@code destination}, encapsulated to {@code target}, with the node's own address
   * {@code source} (not the device's link-scope address, which the receiving node holds too and drops as martian).
   */
  static Forgery fromNode(Namespace ns, String source, String destination, String target) {
    Forgery f = new Forgery(ns);
    try {
      IpFamily inner = destination.contains(":") ? IpFamily.V6 : IpFamily.V4;
      String flag = inner == IpFamily.V4 ? "-4" : "-6";
      String host = inner == IpFamily.V4 ? "/32" : "/128";
      String outer = target.contains(":") ? "ip6" : "ip";
      f.run("ip " + flag + " route add " + destination + host + " src " + source + " dev egress-vx encap " + outer
          + " id 1 dst " + target + " csum table " + TABLE);
      f.undo.add(0, "ip " + flag + " route flush table " + TABLE);
      f.run("ip " + flag + " rule add pref " + PREF + " iif lo to " + destination + host + " lookup " + TABLE);
      f.undo.add(0, "ip " + flag + " rule del pref " + PREF);
      return f;
    } catch (RuntimeException e) {
      f.close();
      throw e;
    }
  }

  /** Plain packets to {@code destination} from {@code forged}, through next hop {@code gateway}. */
  static Forgery spoof(Namespace ns, String forged, String destination, String gateway) {
    return open(ns, forged, destination, gateway, false);
  }

  private static Forgery open(Namespace ns, String forged, String destination, String target, boolean tunnel) {
    Forgery f = new Forgery(ns);
    try {
      f.setUp(forged, destination, target, tunnel);
      return f;
    } catch (RuntimeException e) {
      f.close();
      throw e;
    }
  }

  private void setUp(String forged, String destination, String target, boolean tunnel) {
    IpFamily inner = forged.contains(":") ? IpFamily.V6 : IpFamily.V4;
    String flag = inner == IpFamily.V4 ? "-4" : "-6";
    String host = inner == IpFamily.V4 ? "/32" : "/128";
    boolean localDestination = ns.tryExec("ip", flag, "route", "show", "table", "local", destination).stdout()
        .contains("local");
    if (tunnel) {
      run("ip link add " + DEVICE + " type vxlan external gpe dstport 4799");
      undo.add(0, "ip link del " + DEVICE);
      run("ip link set " + DEVICE + " up");
      run("ip addr add " + forged + host + " dev " + DEVICE + (inner == IpFamily.V6 ? " nodad" : ""));
      String outer = target.contains(":") ? "ip6" : "ip";
      // src before encap: after it, iproute2 takes it as the outer source
      // csum: a UDP checksum, which IPv6 requires (the agent's routes carry it too)
      run("ip " + flag + " route add " + destination + host + " src " + forged + " dev " + DEVICE + " encap " + outer
          + " id 1 dst " + target + outerSource + " csum table " + TABLE);
    } else {
      run("ip addr add " + forged + host + " dev lo" + (inner == IpFamily.V6 ? " nodad" : ""));
      undo.add(0, "ip " + flag + " addr del " + forged + host + " dev lo");
      run("ip " + flag + " route add " + destination + host + " via " + target + " src " + forged + " table " + TABLE);
    }
    undo.add(0, "ip " + flag + " route flush table " + TABLE);
    if (localDestination) {
      run("ip " + flag + " rule add pref 1000 lookup local");
      undo.add(0, "ip " + flag + " rule del pref 1000");
      run("ip " + flag + " rule del pref 0");
      undo.add(0, "ip " + flag + " rule add pref 0 lookup local");
    }
    run("ip " + flag + " rule add pref " + PREF + " iif lo to " + destination + host + " lookup " + TABLE);
    undo.add(0, "ip " + flag + " rule del pref " + PREF);
  }

  /**
   * A VXLAN-GPE datagram's payload as a node steering an IPv4 endpoint sends it (VNI 1, next protocol IPv4, no inner
   * Ethernet): an IPv4 UDP packet from {@code innerSource} to {@code destination}:{@code port} carrying {@code data}.
   */
  static byte[] gpeDatagram(String innerSource, String destination, int port, byte[] data) {
    java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(8 + 20 + 8 + data.length);
    b.put(new byte[] {0x0c, 0, 0, 0x01, 0, 0, 0x01, 0}); // flags I and P, next protocol 1 (IPv4); VNI 1
    int ip = b.position();
    b.put((byte) 0x45).put((byte) 0).putShort((short) (20 + 8 + data.length)).putInt(0)
        .put((byte) 64).put((byte) 17).putShort((short) 0)
        .put(io.egressservice.ip.IpPrefix.parse(innerSource).addressBytes())
        .put(io.egressservice.ip.IpPrefix.parse(destination).addressBytes());
    int sum = 0;
    for (int i = ip; i < ip + 20; i += 2) {
      sum += ((b.get(i) & 0xff) << 8) | (b.get(i + 1) & 0xff);
    }
    while ((sum >> 16) != 0) {
      sum = (sum & 0xffff) + (sum >> 16);
    }
    b.putShort(ip + 10, (short) ~sum);
    b.putShort((short) 40000).putShort((short) port).putShort((short) (8 + data.length)).putShort((short) 0);
    b.put(data);
    return b.array();
  }

  private void run(String cmd) {
    ns.exec(cmd.split(" "));
  }

  @Override
  public void close() {
    for (String cmd : undo) {
      ns.tryExec(cmd.split(" "));
    }
    undo.clear();
  }
}
