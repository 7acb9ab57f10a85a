package io.egressservice.testbed;

import io.egressservice.ip.IpFamily;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;

/**
 * How a {@link Cluster}'s namespaces are wired (the commands; the shape is the Cluster's). Few processes, since
 * each costs much on a busy machine: sysctls are written from a thread inside the namespace, and each namespace
 * gets one {@code ip -n <ns> -batch}.
 */
final class Wiring {
  private Wiring() {}

  /** Every namespace in one {@code ip -batch}, then its sysctls, before any interface exists (they inherit them). */
  static void createNamespaces(Collection<Namespace> namespaces, Path netnsFile, Set<String> nodeRoles, int nodeRpFilter,
      Traffic traffic) {
    StringBuilder batch = new StringBuilder();
    for (Namespace ns : namespaces) {
      appendLine(netnsFile, ns.name()); // first, so the watchdog knows it even if the batch fails midway
      batch.append("netns add ").append(ns.name()).append('\n');
    }
    Namespace.Result r = Namespace.run(List.of("ip", "-batch", "-"), batch.toString());
    if (r.exitCode() != 0) {
      throw new IllegalStateException("ip netns add failed: " + r.stderr().trim());
    }
    for (Namespace ns : namespaces) {
      boolean node = nodeRoles.contains(ns.role());
      boolean router = node || ns.role().startsWith("ext-");
      List<String> settings = new ArrayList<>(List.of("net.ipv4.conf.all.rp_filter=0",
          "net.ipv4.conf.default.rp_filter=" + (node ? nodeRpFilter : 0),
          "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0",
          "net.ipv6.conf.all.keep_addr_on_down=1", "net.ipv6.conf.default.keep_addr_on_down=1",
          "net.ipv6.conf.all.accept_ra=0", "net.ipv6.conf.default.accept_ra=0"));
      if (router) {
        settings.addAll(List.of("net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1"));
      }
      sysctls(traffic, ns, settings);
    }
  }

  /** Writes /proc/sys from a thread inside the namespace (no process; /proc/sys/net follows the thread's namespace). */
  private static void sysctls(Traffic traffic, Namespace ns, List<String> settings) {
    traffic.thread(ns.role()).call(() -> {
      for (String kv : settings) {
        String[] p = kv.split("=", 2);
        Files.writeString(Path.of("/proc/sys/" + p[0].replace('.', '/')), p[1]);
      }
      return null;
    });
  }

  static void wireNode(Cluster.Node node, Namespace lan, Collection<Cluster.Node> all) {
    int i = node.index();
    Namespace ns = node.netns();
    List<String> lines = new ArrayList<>();
    lines.add("link set lo up");
    lines.add("link add eth0 type veth peer name " + node.name() + " netns " + lan.name());
    lines.add("addr add " + node.ip(IpFamily.V4) + "/24 dev eth0");
    lines.add("addr add " + node.ip(IpFamily.V6) + "/64 dev eth0 nodad");
    lines.add("link set eth0 up");
    for (Cluster.Pod p : node.pods()) {
      String dev = "p" + p.index();
      lines.add("link add " + dev + " type veth peer name eth0 netns " + p.netns().name());
      lines.add("addr add " + Addresses.podGateway(i, IpFamily.V4) + "/32 dev " + dev);
      lines.add("addr add " + Addresses.podGateway(i, IpFamily.V6) + "/128 dev " + dev + " nodad");
      lines.add("link set " + dev + " up");
    }
    for (Cluster.Uplink u : node.uplinks()) {
      lines.add("link add " + u.device() + " type veth peer name eth0 netns " + u.router().name());
      lines.add("addr add " + u.nodeIp(IpFamily.V4) + "/24 dev " + u.device());
      lines.add("addr add " + u.nodeIp(IpFamily.V6) + "/64 dev " + u.device() + " nodad");
      lines.add("link set " + u.device() + " up");
    }
    lines.addAll(nodeRoutes(node, all));
    ns.ip(lines.toArray(String[]::new));
    ns.nft("table inet esa_testbed_cni {\n"
        + "  chain postrouting {\n"
        + "    type nat hook postrouting priority srcnat; policy accept;\n"
        + "    ip saddr " + Addresses.CLUSTER_CIDR_V4 + " ip daddr != " + Addresses.CLUSTER_CIDR_V4 + " masquerade\n"
        + "    ip6 saddr " + Addresses.CLUSTER_CIDR_V6 + " ip6 daddr != " + Addresses.CLUSTER_CIDR_V6 + " masquerade\n"
        + "  }\n"
        + "}\n");
  }

  /** The node's pods and the routers behind its uplinks (after the client, whose links end in the routers). */
  static void wirePodsAndRouters(Cluster.Node node) {
    int i = node.index();
    for (Cluster.Pod p : node.pods()) {
      p.netns().ip(
          "link set lo up",
          "addr add " + p.ip(IpFamily.V4) + "/32 dev eth0",
          "addr add " + p.ip(IpFamily.V6) + "/128 dev eth0 nodad",
          "link set eth0 up",
          "route add " + Addresses.podGateway(i, IpFamily.V4) + "/32 dev eth0",
          "route add default via " + Addresses.podGateway(i, IpFamily.V4) + " dev eth0",
          "route add " + Addresses.podGateway(i, IpFamily.V6) + "/128 dev eth0",
          "route add ::/0 via " + Addresses.podGateway(i, IpFamily.V6) + " dev eth0 onlink");
    }
    for (Cluster.Uplink u : node.uplinks()) {
      int k = u.index();
      u.router().ip(
          "link set lo up",
          "addr add " + Addresses.uplinkRouterIp(i, k, IpFamily.V4) + "/24 dev eth0",
          "addr add " + Addresses.uplinkRouterIp(i, k, IpFamily.V6) + "/64 dev eth0 nodad",
          "addr add " + Addresses.EXTERNAL_V4 + "/32 dev lo",
          "addr add " + Addresses.EXTERNAL_V6 + "/128 dev lo nodad",
          "link set eth0 up",
          "route add " + Addresses.LB_RANGE_V4 + " via " + u.nodeIp(IpFamily.V4) + " dev eth0",
          "route add " + Addresses.LB_RANGE_V6 + " via " + u.nodeIp(IpFamily.V6) + " dev eth0",
          "addr add " + Addresses.clientLinkRouterIp(i, k, IpFamily.V4) + "/24 dev client",
          "addr add " + Addresses.clientLinkRouterIp(i, k, IpFamily.V6) + "/64 dev client nodad",
          "link set client up",
          "route add " + Addresses.CLIENT_V4 + "/32 via " + Addresses.clientLinkClientIp(i, k, IpFamily.V4) + " dev client",
          "route add " + Addresses.CLIENT_V6 + "/128 via " + Addresses.clientLinkClientIp(i, k, IpFamily.V6)
              + " dev client");
    }
  }

  /** The node's routes (idempotent: also what {@link Cluster.Node#powerOn()} puts back). */
  static List<String> nodeRoutes(Cluster.Node node, Collection<Cluster.Node> all) {
    List<String> lines = new ArrayList<>();
    for (Cluster.Pod p : node.pods()) {
      lines.add("route replace " + p.ip(IpFamily.V4) + "/32 dev p" + p.index());
      lines.add("route replace " + p.ip(IpFamily.V6) + "/128 dev p" + p.index());
    }
    for (Cluster.Node other : all) {
      if (other != node) {
        for (IpFamily f : IpFamily.values()) {
          lines.add("route replace " + Addresses.podCidr(other.index(), f) + " via " + other.ip(f) + " dev eth0");
        }
      }
    }
    for (Cluster.Uplink u : node.uplinks()) {
      String table = u.table() == 0 ? "" : " table " + u.table();
      lines.add("route replace default via " + Addresses.uplinkRouterIp(node.index(), u.index(), IpFamily.V4) + " dev "
          + u.device() + table);
      lines.add("route replace ::/0 via " + Addresses.uplinkRouterIp(node.index(), u.index(), IpFamily.V6)
          + " dev " + u.device() + table);
    }
    return lines;
  }

  /** The client's loopback addresses, one link to every external router, and its counters of LB replies. */
  static void wireClient(Namespace client, List<Cluster.Uplink> uplinks) {
    List<String> lines = new ArrayList<>(List.of(
        "link set lo up",
        "addr add " + Addresses.CLIENT_V4 + "/32 dev lo",
        "addr add " + Addresses.CLIENT_V6 + "/128 dev lo nodad"));
    StringBuilder probe = new StringBuilder("table inet esa_testbed_probe {\n");
    StringBuilder rules = new StringBuilder("  chain input {\n    type filter hook input priority 0; policy accept;\n");
    for (Cluster.Uplink u : uplinks) {
      int i = u.nodeIndex();
      int k = u.index();
      String dev = "to-" + u.where().substring(4);
      lines.add("link add " + dev + " type veth peer name client netns " + u.router().name());
      lines.add("addr add " + Addresses.clientLinkClientIp(i, k, IpFamily.V4) + "/24 dev " + dev);
      lines.add("addr add " + Addresses.clientLinkClientIp(i, k, IpFamily.V6) + "/64 dev " + dev + " nodad");
      lines.add("link set " + dev + " up");
      probe.append("  counter ").append(counterName(u)).append(" {}\n");
      rules.append("    iifname \"").append(dev).append("\" ip saddr ").append(Addresses.LB_RANGE_V4)
          .append(" counter name \"").append(counterName(u)).append("\"\n");
      rules.append("    iifname \"").append(dev).append("\" ip6 saddr ").append(Addresses.LB_RANGE_V6)
          .append(" counter name \"").append(counterName(u)).append("\"\n");
    }
    client.ip(lines.toArray(String[]::new));
    client.nft(probe.append(rules).append("  }\n}\n").toString());
  }

  static String counterName(Cluster.Uplink u) {
    return "via_" + u.where().replace('-', '_');
  }

  // ---- cleanup --------------------------------------------------------------------------------------

  static void appendLine(Path file, String line) {
    try {
      Files.writeString(file, line + "\n", StandardOpenOption.APPEND);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
