package io.egressservice.bench;

import io.egressservice.netlink.NetnsThread;
import io.egressservice.kernel.linux.NftClient;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;

/**
 * The floor of the nft side of one endpoint change, without the agent (scale.sh {@code nftfloor N [mark]}): in a
 * fresh network namespace, a table shaped as the agent's ({@code inet egress_service_agent}: the SNAT map, in mark
 * mode also the mark map with its jump chain (5 endpoints and the LB IP per service), the SNAT elements with the
 * agent's comments, the v6 maps empty) holding N services x 5 endpoints, then K transactions of what a change
 * writes (delete the old address's elements, add the new one's, in one transaction: the agent may use two), each
 * one libnftables call through the agent's own {@link NftClient} on a {@link NetnsThread}. The CPU is that
 * thread's (user and system from /proc/self/task): libnftables' per-transaction work (its cache of the table's sets
 * rebuilt after each commit) and the kernel's. Compared at 100 and 5,000 services it tells whether the cost of a
 * change in the agent that grows with the node is nft's own.
 */
final class NftElementFloor {
  static final String TABLE = "egress_service_agent";
  static final int ENDPOINTS = 5;
  static final int WARMUP = 20;
  static final int CHUNK = 4096;

  private NftElementFloor() {}

  /** Prints and returns the figure for {@code services} x 5 endpoints, {@code changes} transactions. */
  static String measure(int services, boolean mark, int changes) throws IOException, InterruptedException {
    String ns = "esa-floor-" + ProcessHandle.current().pid();
    run("ip", "netns", "add", ns);
    try (NetnsThread thread = NetnsThread.enter(Optional.of(ns)); NftClient nft = NftClient.open(thread)) {
      long t = System.nanoTime();
      nft.runScript(base(mark));
      List<String> lines = new ArrayList<>();
      String[][] addresses = new String[services][ENDPOINTS];
      for (int s = 0; s < services; s++) {
        for (int e = 0; e < ENDPOINTS; e++) {
          addresses[s][e] = address(s * ENDPOINTS + e);
          lines.add(element(addresses[s][e], s, mark));
        }
        if (mark) { // the agent's mark map also holds each service's LB IP (6 mark elements for 5 SNAT ones)
          lines.add("add element inet " + TABLE + " mark_v4 { " + lb(s) + " : jump mark_t100 }\n");
        }
      }
      for (int i = 0; i < lines.size(); i += CHUNK) {
        nft.runScript(String.join("", lines.subList(i, Math.min(lines.size(), i + CHUNK))));
      }
      int elements = services * ENDPOINTS + (mark ? services * (ENDPOINTS + 1) : 0);
      System.out.printf(Locale.ROOT, "  %s: table with %d elements (%d services x %d endpoints%s) in %.1f s%n",
          thread.describe(), elements, services, ENDPOINTS, mark ? ", SNAT and mark map" : ", SNAT map",
          (System.nanoTime() - t) / 1e9);
      Random random = new Random(42);
      int next = services * ENDPOINTS;
      long[] ticks0 = null;
      double[] wallMs = new double[changes];
      long wall0 = 0;
      for (int i = 0; i < WARMUP + changes; i++) {
        if (i == WARMUP) {
          ticks0 = netnsTicks();
          wall0 = System.nanoTime();
        }
        int s = random.nextInt(services);
        int e = random.nextInt(ENDPOINTS);
        String old = addresses[s][e];
        addresses[s][e] = address(next++);
        StringBuilder script = new StringBuilder();
        script.append("delete element inet ").append(TABLE).append(" snat_v4 { ").append(old).append(" }\n");
        if (mark) {
          script.append("delete element inet ").append(TABLE).append(" mark_v4 { ").append(old).append(" }\n");
        }
        script.append(element(addresses[s][e], s, mark));
        long c0 = System.nanoTime();
        nft.runScript(script.toString());
        if (i >= WARMUP) {
          wallMs[i - WARMUP] = (System.nanoTime() - c0) / 1e6;
        }
      }
      double wallS = (System.nanoTime() - wall0) / 1e9;
      long[] ticks1 = netnsTicks();
      Arrays.sort(wallMs);
      double user = (ticks1[0] - ticks0[0]) * 10.0 / changes;
      double sys = (ticks1[1] - ticks0[1]) * 10.0 / changes;
      String row = String.format(Locale.ROOT, "%d services x %d, %s (%d elements): %.1f ms CPU per transaction (%.1f"
              + " user + %.1f sys), wall p50 %.1f ms; %d transactions in %.1f s", services, ENDPOINTS,
          mark ? "mark mode" : "source mode", elements, user + sys, user, sys, wallMs[changes / 2], changes, wallS);
      System.out.println("  ROW nft-floor " + row + "; " + ScaleBench.loadavg());
      return row;
    } finally {
      run("ip", "netns", "del", ns);
    }
  }

  /** The agent's table shape: SNAT map and its rules; in mark mode the mark map, a network chain and the hook. */
  static String base(boolean mark) {
    StringBuilder sb = new StringBuilder("table inet " + TABLE + " {\n"
        + "  map snat_v4 { type ipv4_addr : ipv4_addr; }\n  map snat_v6 { type ipv6_addr : ipv6_addr; }\n"
        + "  set in_cluster_v4 { type ipv4_addr; flags interval; elements = { 10.0.0.0/8 }; }\n"
        + "  chain postrouting {\n    type nat hook postrouting priority srcnat; policy accept;\n"
        + "    ip daddr @in_cluster_v4 return\n    snat ip to ip saddr map @snat_v4\n  }\n");
    if (mark) {
      sb.append("  map mark_v4 { type ipv4_addr : verdict; }\n  map mark_v6 { type ipv6_addr : verdict; }\n"
          + "  chain mark_t100 {\n    meta mark set meta mark & 0xc0ffffff | 0x01000000\n  }\n"
          + "  chain mark_prerouting {\n    type filter hook prerouting priority mangle; policy accept;\n"
          + "    ip saddr vmap @mark_v4\n  }\n");
    }
    return sb.append("}\n").toString();
  }

  /** The add commands of one endpoint of service {@code s}: its SNAT element (and mark element), commented. */
  static String element(String address, int s, boolean mark) {
    String comment = " comment \"bench-" + s + "/svc-" + s + "\"";
    String out = "add element inet " + TABLE + " snat_v4 { " + address + comment + " : " + lb(s) + " }\n";
    if (mark) {
      out += "add element inet " + TABLE + " mark_v4 { " + address + comment + " : jump mark_t100 }\n";
    }
    return out;
  }

  static String lb(int s) {
    return "5." + (s >> 16 & 255) + "." + (s >> 8 & 255) + "." + (s & 255);
  }

  static String address(int i) {
    return "10." + (128 + (i >> 16 & 63)) + "." + (i >> 8 & 255) + "." + (i & 255);
  }

  /** User and system ticks of this JVM's netns threads. */
  static long[] netnsTicks() {
    long[] sum = new long[2];
    for (Map.Entry<String, long[]> e : AgentLatencyBench.threadTicks(Path.of("/proc/self")).entrySet()) {
      if (e.getKey().contains(" netns-esa-floor")) {
        sum[0] += e.getValue()[0];
        sum[1] += e.getValue()[1];
      }
    }
    return sum;
  }

  static void run(String... command) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(command).inheritIO().start();
    if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
      throw new IllegalStateException(String.join(" ", command) + " failed");
    }
  }
}
