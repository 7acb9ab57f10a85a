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

  private Forgery(Namespace ns) {
    this.ns = ns;
  }

  /** VXLAN-GPE to {@code target} with inner source {@code forged}, for packets to {@code destination}. */
  static Forgery tunnel(Namespace ns, String forged, String destination, String target) {
    return open(ns, forged, destination, target, true);
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
          + " id 1 dst " + target + " csum table " + TABLE);
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
