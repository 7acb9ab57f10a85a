package io.egressservice.testbed;

import io.egressservice.ip.IpFamily;

/**
 * The address plan of a {@link Cluster}, dual stack throughout. Node {@code i} (1 for node-a, 2 for node-b, ...),
 * its pod {@code j} (1, 2, ...) and its uplink {@code k} (1 = main table, 2 = table 100):
 *
 * <pre>
 *   node network     192.168.50.0/24      fd00:50::/64          node i: .1i / ::1i (node-a 192.168.50.11)
 *   pod CIDR node i  10.128.i.0/24        fd10:128:0:i::/64     gateway .1 / ::1 (on every pod veth of the node)
 *   pod j on node i  10.128.i.(4+j)       fd10:128:0:i::(4+j)   (pod-a1 10.128.1.5)
 *   uplink k of i    172.16.ik.0/24       fd00:16:ik::/64       node .1, external router .2
 *   client link ik   100.64.ik.0/24       fd00:64:ik::/64       external router .1, client .2
 *   external host    203.0.113.10         2001:db8:113::10      owned by every external router
 *   client           198.51.100.100       2001:db8:100::100     on the client's loopback
 *   LB IPs           5.5.5.0/24           2001:db8:5::/64       routed by every external router to its node
 *   cluster CIDR     10.128.0.0/16        fd10:128::/48
 *   service CIDR     172.30.0.0/16        fd02::/112
 * </pre>
 */
public final class Addresses {
  public static final String CLUSTER_CIDR_V4 = "10.128.0.0/16";
  public static final String CLUSTER_CIDR_V6 = "fd10:128::/48";
  public static final String SERVICE_CIDR_V4 = "172.30.0.0/16";
  public static final String SERVICE_CIDR_V6 = "fd02::/112";
  public static final String EXTERNAL_V4 = "203.0.113.10";
  public static final String EXTERNAL_V6 = "2001:db8:113::10";
  public static final String CLIENT_V4 = "198.51.100.100";
  public static final String CLIENT_V6 = "2001:db8:100::100";
  public static final String LB_RANGE_V4 = "5.5.5.0/24";
  public static final String LB_RANGE_V6 = "2001:db8:5::/64";
  /** The routing table of every node's second uplink. */
  public static final int SECOND_UPLINK_TABLE = 100;

  private Addresses() {}

  public static String external(IpFamily f) {
    return f == IpFamily.V4 ? EXTERNAL_V4 : EXTERNAL_V6;
  }

  public static String client(IpFamily f) {
    return f == IpFamily.V4 ? CLIENT_V4 : CLIENT_V6;
  }

  public static String clusterCidr(IpFamily f) {
    return f == IpFamily.V4 ? CLUSTER_CIDR_V4 : CLUSTER_CIDR_V6;
  }

  public static String lbRange(IpFamily f) {
    return f == IpFamily.V4 ? LB_RANGE_V4 : LB_RANGE_V6;
  }

  /** The {@code n}-th LB IP (1..250): 5.5.5.n, 2001:db8:5::n. */
  public static String lbIp(int n, IpFamily f) {
    return f == IpFamily.V4 ? "5.5.5." + n : "2001:db8:5::" + n;
  }

  /** Node {@code i}'s InternalIP on the node network. */
  /**
   * The control plane's address on the node network (on the lan bridge): where the allocator's health probes of
   * the agents come from ({@code --host-probe-netns} is the lan namespace).
   */
  public static String controlPlaneIp(IpFamily f) {
    return f == IpFamily.V4 ? "192.168.50.2" : "fd00:50::2";
  }

  public static String nodeIp(int i, IpFamily f) {
    return f == IpFamily.V4 ? "192.168.50." + (10 + i) : "fd00:50::" + (10 + i);
  }

  static int nodePrefixLength(IpFamily f) {
    return f == IpFamily.V4 ? 24 : 64;
  }

  public static String podCidr(int i, IpFamily f) {
    return f == IpFamily.V4 ? "10.128." + i + ".0/24" : "fd10:128:0:" + i + "::/64";
  }

  static String podGateway(int i, IpFamily f) {
    return f == IpFamily.V4 ? "10.128." + i + ".1" : "fd10:128:0:" + i + "::1";
  }

  public static String podIp(int i, int j, IpFamily f) {
    return f == IpFamily.V4 ? "10.128." + i + "." + (4 + j) : "fd10:128:0:" + i + "::" + (4 + j);
  }

  /** The node's own address on its uplink {@code k} (what a masquerade of traffic leaving by it shows). */
  public static String uplinkNodeIp(int i, int k, IpFamily f) {
    return f == IpFamily.V4 ? "172.16." + (10 * i + k) + ".1" : "fd00:16:" + (10 * i + k) + "::1";
  }

  static String uplinkRouterIp(int i, int k, IpFamily f) {
    return f == IpFamily.V4 ? "172.16." + (10 * i + k) + ".2" : "fd00:16:" + (10 * i + k) + "::2";
  }

  static String clientLinkRouterIp(int i, int k, IpFamily f) {
    return f == IpFamily.V4 ? "100.64." + (10 * i + k) + ".1" : "fd00:64:" + (10 * i + k) + "::1";
  }

  static String clientLinkClientIp(int i, int k, IpFamily f) {
    return f == IpFamily.V4 ? "100.64." + (10 * i + k) + ".2" : "fd00:64:" + (10 * i + k) + "::2";
  }

  static String hostPrefix(IpFamily f) {
    return f == IpFamily.V4 ? "/32" : "/128";
  }
}
