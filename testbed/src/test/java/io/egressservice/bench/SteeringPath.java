package io.egressservice.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.jna.LastErrorException;
import com.sun.jna.Native;
import com.sun.jna.Platform;
import io.egressservice.testbed.Cluster;
import io.egressservice.testbed.Traffic;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The steered pod's path as the kernel sees it, for {@link SteeringBench}: the offload state of every device on the
 * way (ethtool features over netlink, MTU and GSO/GRO sizes), settings to try on them, the average size of what each
 * device carried (one veth packet is one skb: 64 KiB means GSO/GRO kept the segments together), IP fragmentation
 * counters of every namespace on the way, and full-size UDP from the steered pod.
 */
final class SteeringPath {
  /** A device in a namespace of the cluster (by role). */
  record Device(String role, String dev, String what) {}

  /** Steered pod pod-b1 -> node-b -> egress-vx over the node network (lan bridge) -> node-a -> uplink 2 -> ext-a2. */
  static final List<Device> PATH = List.of(
      new Device("pod-b1", "eth0", "steered pod"),
      new Device("node-b", "p1", "its veth on node-b"),
      new Device("node-b", "egress-vx", "steering device, sender"),
      new Device("node-b", "eth0", "underlay, node-b"),
      new Device("lan", "node-b", "bridge port"),
      new Device("lan", "node-a", "bridge port"),
      new Device("node-a", "eth0", "underlay, node-a"),
      new Device("node-a", "egress-vx", "steering device, host"),
      new Device("node-a", "up2", "uplink 2"),
      new Device("ext-a2", "eth0", "external router"),
      new Device("node-a", "p1", "host pod's veth"),
      new Device("pod-a1", "eth0", "host pod"));

  /** The roles whose IP fragmentation counters are read. */
  static final List<String> NAMESPACES = List.of("pod-b1", "node-b", "lan", "node-a", "ext-a2", "pod-a1");

  /** Kernel feature names behind ethtool's tx-checksumming, scatter-gather, tso, gso, gro, ... (short label first). */
  static final Map<String, String> FEATURES = features();

  private static Map<String, String> features() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("csum", "tx-checksum-ip-generic");
    m.put("sg", "tx-scatter-gather");
    m.put("tso", "tx-tcp-segmentation");
    m.put("gso", "tx-generic-segmentation");
    m.put("gro", "rx-gro");
    m.put("gro-list", "rx-gro-list");
    m.put("udp-gro-fwd", "rx-udp-gro-forwarding");
    m.put("tnl-seg", "tx-udp_tnl-segmentation");
    m.put("tnl-csum-seg", "tx-udp_tnl-csum-segmentation");
    return m;
  }

  private SteeringPath() {}

  /** One line per device: MTU, gso_max_size, gro_max_size and each feature on (+) or off (-). */
  static List<String> offloads(Cluster c) {
    List<String> out = new ArrayList<>();
    out.add("offloads (+ on, - off; " + String.join(", ", FEATURES.entrySet().stream().map(e -> e.getKey() + " = "
        + e.getValue()).toList()) + "):");
    Map<String, Map<String, Set<String>>> byRole = new LinkedHashMap<>();
    for (Device d : PATH) {
      Map<String, Set<String>> active = byRole.computeIfAbsent(d.role(),
          r -> c.traffic().thread(r).call(Ethtool::activeFeatures));
      JsonNode link = c.netns(d.role()).json("ip", "-j", "-d", "link", "show", "dev", d.dev()).get(0);
      StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "  %-7s %-10s mtu %5d gso_max %6s gro_max %6s ",
          d.role(), d.dev(), link.path("mtu").asInt(), link.path("gso_max_size").asText("?"),
          link.path("gro_max_size").asText("?")));
      Set<String> on = active.getOrDefault(d.dev(), Set.of());
      FEATURES.forEach((label, name) -> line.append(on.contains(name) ? " +" : " -").append(label));
      out.add(line.append("  (").append(d.what()).append(')').toString());
    }
    return out;
  }

  /**
   * Applies a named setting to try: {@code veth-gro} (rx-gro on every veth of the path: a veth with GRO on receives
   * through NAPI, 5.13+), {@code udp-gro-fwd} (rx-udp-gro-forwarding on the underlay veths and bridge ports), {@code
   * vx-gro-off} / {@code vx-gso-off} (a control: GRO or GSO off on both steering devices), {@code tnl-notrack} (the
   * tunnel's outer packets untracked on both nodes), {@code rps-node-a} (node-a's underlay receive by RPS: its half
   * of the steered path off the sender's CPU), {@code no-guard} (a measurement: the agents stalled and their guard
   * table's forward chain emptied, to see what its checks cost). Returns what it did.
   */
  static String tune(Cluster c, String setting) {
    List<Device> targets = new ArrayList<>();
    Map<String, Boolean> features;
    switch (setting) {
      case "veth-gro" -> {
        PATH.stream().filter(d -> !d.dev().equals("egress-vx")).forEach(targets::add);
        features = Map.of("rx-gro", true);
      }
      case "udp-gro-fwd" -> {
        PATH.stream().filter(d -> d.what().startsWith("underlay") || d.what().equals("bridge port")).forEach(targets::add);
        features = Map.of("rx-udp-gro-forwarding", true, "rx-gro", true);
      }
      case "vx-gro-off" -> {
        PATH.stream().filter(d -> d.dev().equals("egress-vx")).forEach(targets::add);
        features = Map.of("rx-gro", false);
      }
      case "vx-gso-off" -> {
        PATH.stream().filter(d -> d.dev().equals("egress-vx")).forEach(targets::add);
        features = Map.of("tx-generic-segmentation", false);
      }
      case "tnl-notrack" -> {
        // the tunnel's outer UDP packets (node to node, port 4799) kept out of conntrack on both nodes: a table of
        // the bench's own; the agent's guard table matches that port without conntrack
        String table = "table inet esa_bench_notrack {\n"
            + "  chain pre { type filter hook prerouting priority raw; udp dport 4799 notrack; }\n"
            + "  chain out { type filter hook output priority raw; udp dport 4799 notrack; }\n"
            + "}\n";
        c.netns("node-a").nft(table);
        c.netns("node-b").nft(table);
        return setting + ": udp dport 4799 notrack (raw prerouting and output) on node-a and node-b";
      }
      case "rps-node-a" -> {
        // node-a's receive of the tunnel (and all it does after: decapsulation, forwarding, SNAT) steered to a CPU
        // chosen by the flow's hash instead of done inline by the sender: as if node-a were another machine
        c.netns("node-a").exec("sh", "-c", "echo 3 > /sys/class/net/eth0/queues/rx-0/rps_cpus");
        return setting + ": rps_cpus 3 on node-a's eth0 (its underlay receive on either CPU, by flow hash)";
      }
      case "no-guard" -> {
        // what the agent's own forward-chain checks cost the steered path: both agents stalled (so nothing restores
        // the chain) and the guard table's forward chain emptied on both nodes; a measurement, never a setting
        List<String> flushed = new ArrayList<>();
        for (String node : List.of("node-a", "node-b")) {
          c.node(node).suspendAgent();
          String rules = c.netns(node).exec("nft", "list", "chain", "inet", "egress_service_agent_guard", "forward");
          c.netns(node).exec("nft", "flush", "chain", "inet", "egress_service_agent_guard", "forward");
          flushed.add(node + " (" + rules.lines().filter(l -> l.contains("counter") || l.contains("accept")).count()
              + " rules)");
        }
        return setting + ": agents stalled, chain inet egress_service_agent_guard forward flushed on " + flushed;
      }
      default -> throw new IllegalArgumentException("unknown setting " + setting
          + " (veth-gro, udp-gro-fwd, vx-gro-off, vx-gso-off, tnl-notrack, rps-node-a, no-guard)");
    }
    for (Device d : targets) {
      c.traffic().thread(d.role()).call(() -> {
        Ethtool.set(d.dev(), features);
        return null;
      });
    }
    return setting + ": " + features + " on " + targets.stream().map(d -> d.role() + "/" + d.dev()).toList();
  }

  /** rx and tx packet and byte counters of every device of the path. */
  static Map<Device, long[]> counters(Cluster c) {
    Map<Device, long[]> out = new LinkedHashMap<>();
    for (Device d : PATH) {
      JsonNode s = c.netns(d.role()).json("ip", "-j", "-s", "link", "show", "dev", d.dev()).get(0).path("stats64");
      out.put(d, new long[] {s.path("rx").path("packets").asLong(), s.path("rx").path("bytes").asLong(),
          s.path("tx").path("packets").asLong(), s.path("tx").path("bytes").asLong()});
    }
    return out;
  }

  /** Bytes per packet (per skb on a veth) each device received and sent between two {@link #counters} readings. */
  static List<String> packetSizes(Map<Device, long[]> before, Map<Device, long[]> after) {
    List<String> out = new ArrayList<>();
    after.forEach((d, a) -> {
      long[] b = before.get(d);
      long rxp = a[0] - b[0];
      long txp = a[2] - b[2];
      out.add(String.format(Locale.ROOT, "  %-7s %-10s rx %9d pkts %7s B/pkt   tx %9d pkts %7s B/pkt", d.role(), d.dev(),
          rxp, rxp == 0 ? "-" : String.valueOf((a[1] - b[1]) / rxp), txp, txp == 0 ? "-" : String.valueOf((a[3] - b[3]) / txp)));
    });
    return out;
  }

  /** Ip FragCreates, FragOKs, ReasmReqds and Ip6 FragCreates, ReasmReqds of each namespace of the path. */
  static Map<String, long[]> fragments(Cluster c) {
    Map<String, long[]> out = new LinkedHashMap<>();
    for (String role : NAMESPACES) {
      out.put(role, c.traffic().thread(role).call(() -> {
        // /proc/thread-self/net: the namespace of this thread (/proc/self/net is the process's main thread's)
        long[] v4 = snmp(Files.readAllLines(Path.of("/proc/thread-self/net/snmp")), "FragCreates", "ReasmReqds");
        long[] v6 = snmp6(Files.readAllLines(Path.of("/proc/thread-self/net/snmp6")), "Ip6FragCreates", "Ip6ReasmReqds");
        return new long[] {v4[0], v4[1], v6[0], v6[1]};
      }));
    }
    return out;
  }

  private static long[] snmp(List<String> lines, String... names) {
    long[] out = new long[names.length];
    for (int i = 0; i + 1 < lines.size(); i++) {
      if (lines.get(i).startsWith("Ip: ") && lines.get(i + 1).startsWith("Ip: ")) {
        List<String> keys = List.of(lines.get(i).split(" "));
        String[] values = lines.get(i + 1).split(" ");
        for (int k = 0; k < names.length; k++) {
          out[k] = Long.parseLong(values[keys.indexOf(names[k])]);
        }
        break;
      }
    }
    return out;
  }

  private static long[] snmp6(List<String> lines, String... names) {
    long[] out = new long[names.length];
    for (String l : lines) {
      String[] kv = l.trim().split("\\s+");
      for (int k = 0; k < names.length; k++) {
        if (kv.length == 2 && kv[0].equals(names[k])) {
          out[k] = Long.parseLong(kv[1]);
        }
      }
    }
    return out;
  }

  /** The fragmentation counters that moved, per namespace, or "none". */
  static String fragmentDelta(Map<String, long[]> before, Map<String, long[]> after) {
    String[] names = {"FragCreates", "ReasmReqds", "Ip6FragCreates", "Ip6ReasmReqds"};
    List<String> moved = new ArrayList<>();
    after.forEach((role, a) -> {
      long[] b = before.get(role);
      for (int k = 0; k < names.length; k++) {
        if (a[k] != b[k]) {
          moved.add(role + " " + names[k] + " +" + (a[k] - b[k]));
        }
      }
    });
    return moved.isEmpty() ? "no IP fragmentation or reassembly in " + NAMESPACES : String.join(", ", moved);
  }

  /** The C library's socket calls, for what java.net cannot set in Java 17 (IP_MTU_DISCOVER). */
  private static final class C {
    static {
      Native.register(C.class, Platform.C_LIBRARY_NAME);
    }

    static native int socket(int domain, int type, int protocol) throws LastErrorException;

    static native int setsockopt(int fd, int level, int name, byte[] value, int len) throws LastErrorException;

    static native int connect(int fd, byte[] addr, int len) throws LastErrorException;

    static native long send(int fd, byte[] buf, long len, int flags) throws LastErrorException;

    static native long recv(int fd, byte[] buf, long len, int flags) throws LastErrorException;

    static native int close(int fd);
  }

  private static final int AF_INET = 2;
  private static final int SOCK_DGRAM = 2;
  private static final int IPPROTO_IP = 0;
  private static final int IP_MTU_DISCOVER = 10;
  private static final int SOL_SOCKET = 1;
  private static final int SO_RCVTIMEO = 20;
  private static final int EMSGSIZE = 90;
  private static final Map<Integer, String> PMTUDISC = Map.of(0, "IP_PMTUDISC_DONT (no DF)",
      1, "IP_PMTUDISC_WANT (DF, the default)", 2, "IP_PMTUDISC_DO (DF, never fragment locally)");

  /** Outcome of full-size UDP datagrams from one socket. */
  record Datagrams(String mode, int sent, int tooBig, int echoed) {}

  /**
   * {@code count} datagrams of {@code payload} bytes from {@code role} to {@code dst}'s UDP RTT echo, one at a time
   * (each answer awaited up to 300 ms), with {@code pmtudisc} as IP_MTU_DISCOVER: how many were accepted by the
   * kernel, refused with EMSGSIZE, and came back.
   */
  static Datagrams fullSizeUdp(Cluster c, String role, String dst, int payload, int pmtudisc, int count) {
    return c.traffic().thread(role).call(() -> {
      int fd = C.socket(AF_INET, SOCK_DGRAM, IPPROTO_IP);
      try {
        C.setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, intBytes(pmtudisc), 4);
        ByteBuffer tv = ByteBuffer.allocate(16).order(ByteOrder.nativeOrder()).putLong(0).putLong(300_000);
        C.setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, tv.array(), 16);
        ByteBuffer sa = ByteBuffer.allocate(16).order(ByteOrder.nativeOrder()).putShort((short) AF_INET);
        sa.order(ByteOrder.BIG_ENDIAN).putShort((short) Traffic.RTT_PORT).put(InetAddress.getByName(dst).getAddress());
        C.connect(fd, sa.array(), 16);
        byte[] tx = new byte[payload];
        byte[] rx = new byte[payload + 64];
        int sent = 0;
        int tooBig = 0;
        int echoed = 0;
        for (int i = 0; i < count; i++) {
          tx[0] = (byte) i;
          try {
            C.send(fd, tx, tx.length, 0);
            sent++;
          } catch (LastErrorException e) {
            if (e.getErrorCode() != EMSGSIZE) {
              throw e;
            }
            tooBig++;
            continue;
          }
          try {
            long n;
            do {
              n = C.recv(fd, rx, rx.length, 0);
            } while (rx[0] != tx[0]);
            if (n == payload) {
              echoed++;
            }
          } catch (LastErrorException e) {
            // EAGAIN: no answer within 300 ms; ECONNREFUSED or EMSGSIZE from an ICMP error: not echoed either
          }
        }
        return new Datagrams(PMTUDISC.get(pmtudisc), sent, tooBig, echoed);
      } finally {
        C.close(fd);
      }
    });
  }

  private static byte[] intBytes(int v) {
    return ByteBuffer.allocate(4).order(ByteOrder.nativeOrder()).putInt(v).array();
  }

  /** The route and its cached PMTU ({@code ip route get}) from {@code role} to {@code dst}. */
  static String routeGet(Cluster c, String role, String dst) {
    return c.netns(role).exec("ip", "route", "get", dst).trim().replaceAll("\\s+", " ");
  }

  static String loadAverage() throws IOException {
    String[] f = Files.readString(Path.of("/proc/loadavg")).trim().split(" ");
    return f[0] + " " + f[1] + " " + f[2];
  }
}
