package io.egressservice.probe;

import io.egressservice.netlink.Routing;
import com.fasterxml.jackson.databind.JsonNode;
import com.sun.jna.LastErrorException;
import com.sun.jna.Library;
import com.sun.jna.Native;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.netlink.Link;
import io.egressservice.netlink.NetnsThread;
import io.egressservice.netlink.Route;
import io.egressservice.netlink.RouteEncap;
import io.egressservice.netlink.RouteType;
import io.egressservice.netlink.RtNetlink;
import io.egressservice.netlink.Rule;
import io.egressservice.netlink.VxlanDevice;
import io.egressservice.kernel.linux.NftClient;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * The real {@link FeatureCheck}: tries each feature in an anonymous network namespace of its own, made by {@code
 * unshare(CLONE_NEWNET)} on a dedicated thread. Nothing is ever written to the node's namespace, and there is nothing
 * to clean up: the namespace, with every table, rule, route and device the probe made in it, goes away with the
 * thread and its sockets ({@link #close()}).
 *
 * <p>{@code unshare(CLONE_NEWNET)} needs CAP_SYS_ADMIN, which the DaemonSet does not grant (NET_ADMIN only): there
 * {@link #open()} fails with {@link Unavailable} and the agent probes in the node's own namespace instead, with
 * {@link NodeNamespaceCheck} (see {@link KernelProbe}).
 */
public final class ScratchNamespace implements FeatureCheck, AutoCloseable {
  private static final int CLONE_NEWNET = 0x40000000;
  private static final int EPERM = 1;
  /** The agent's defaults, so a refusal is about exactly what the agent would write. */
  private static final int PROTOCOL = 201;
  private static final int TABLE = 7000;
  private static final int PRIORITY = 5000;
  /** Routing.IPV4_DEVCONF_RP_FILTER of {@code <linux/ip.h>} (SteeringDataplane writes it on egress-vx). */

  /** The agent's nftables constructs, one table per feature so that a refusal names one feature. */
  static final java.util.Map<Feature, String> SCRIPTS = new java.util.EnumMap<>(java.util.Map.of(
      Feature.NFT_INET_NAT, """
          table inet esa_probe_nat {
            map snat_v4 { type ipv4_addr : ipv4_addr; }
            map snat_v6 { type ipv6_addr : ipv6_addr; }
            set in_cluster_v4 { type ipv4_addr; flags interval; }
            chain postrouting {
              type nat hook postrouting priority srcnat - 10; policy accept;
              oifname "egress-vx" snat ip to ip saddr
              oifname "egress-vx" snat ip6 to ip6 saddr
              ip daddr @in_cluster_v4 return
              snat ip to ip saddr map @snat_v4
              snat ip6 to ip6 saddr map @snat_v6
            }
          }
          """,
      Feature.NFT_INTERVAL_SETS, """
          table inet esa_probe_intervals {
            set in_cluster_v4 { type ipv4_addr; flags interval; elements = { 10.0.0.0/8, 192.0.2.1-192.0.2.9 } }
            set in_cluster_v6 { type ipv6_addr; flags interval; elements = { fd00::/8 } }
          }
          """,
      Feature.NFT_FIB, """
          table inet esa_probe_fib {
            chain forward {
              type filter hook forward priority filter - 10; policy accept;
              ip saddr 192.0.2.1 ct direction original fib saddr . iif oif missing drop
              udp dport 4799 fib saddr . iif oif missing drop
            }
          }
          """,
      Feature.NFT_CT_MARK, """
          table inet esa_probe_ct {
            chain prerouting {
              type filter hook prerouting priority -140; policy accept;
              ip saddr 192.0.2.1 ct direction original ct status & (snat | confirmed) == confirmed meta mark set meta mark & 0xc0ffffff | 0x01000000
            }
          }
          """,
      Feature.NFT_ELEMENT_TIMEOUTS, """
          table inet esa_probe_timeouts {
            set sources_v4 { type ipv4_addr; flags timeout; elements = { 192.0.2.1 timeout 10000ms } }
          }
          """,
      Feature.NFT_INET_ROUTE_CHAIN, """
          table inet esa_probe_route {
            chain mark_t100 {
              meta mark set meta mark & 0xc0ffffff | 0x01000000
            }
            map mark_v4 { type ipv4_addr : verdict; elements = { 192.0.2.1 comment "ns/name" : jump mark_t100 } }
            set mark_reply_ifaces { type ifname; elements = { "eth0" } }
            chain mark_output {
              type route hook output priority mangle; policy accept;
              ip saddr vmap @mark_v4
            }
            chain mark_reply {
              type filter hook prerouting priority dstnat + 10; policy accept;
              iifname @mark_reply_ifaces ip daddr vmap @mark_v4
            }
          }
          """,
      Feature.NFT_ELEMENT_COMMENTS, """
          table inet esa_probe_comments {
            map snat_v4 { type ipv4_addr : ipv4_addr; elements = { 192.0.2.1 comment "ns/name" : 198.51.100.1 } }
          }
          """,
      Feature.NFT_OBJECT_COMMENTS, """
          table inet esa_probe_counters {
            counter s0 { comment "ns/name" }
          }
          """));

  private interface LibC extends Library {
    LibC INSTANCE = Native.load("c", LibC.class);

    int unshare(int flags) throws LastErrorException;
  }

  /**
   * A probe cannot run here (no scratch namespace; or, from {@link NodeNamespaceCheck}, no rtnetlink in the node's);
   * the reason names the missing privilege or the error.
   */
  public static final class Unavailable extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final boolean permission;

    Unavailable(String message, boolean permission, Throwable cause) {
      super(message, cause);
      this.permission = permission;
    }

    /** Refused for want of CAP_SYS_ADMIN (the DaemonSet's case), not for another error. */
    public boolean permission() {
      return permission;
    }
  }

  private final NetnsThread thread;
  private final RtNetlink netlink;
  private final Optional<NftClient> nft;
  private final String nftError;
  private final String release;
  /** Whether the scripts of every feature went through together; empty until tried. */
  private Optional<Boolean> allScripts = Optional.empty();

  private ScratchNamespace(NetnsThread thread, RtNetlink netlink, Optional<NftClient> nft, String nftError) {
    this.thread = thread;
    this.netlink = netlink;
    this.nft = nft;
    this.nftError = nftError;
    this.release = currentRelease();
  }

  /** Makes the namespace and opens rtnetlink and libnftables in it. */
  public static ScratchNamespace open() {
    NetnsThread thread = NetnsThread.enter(Optional.empty());
    try {
      thread.call(() -> {
        try {
          LibC.INSTANCE.unshare(CLONE_NEWNET);
        } catch (LastErrorException e) {
          throw new Unavailable("cannot make a scratch network namespace (unshare CLONE_NEWNET, needs CAP_SYS_ADMIN): "
              + "errno " + e.getErrorCode(), e.getErrorCode() == EPERM, e);
        }
        return null;
      });
      RtNetlink netlink = RtNetlink.open(thread);
      Optional<NftClient> nft;
      String nftError = "";
      try {
        nft = Optional.of(NftClient.open(thread));
      } catch (RuntimeException | UnsatisfiedLinkError e) {
        // Every nftables feature is then missing, with this reason: the dataplane could not open either.
        nft = Optional.empty();
        nftError = "libnftables cannot be used: " + e.getMessage();
      }
      return new ScratchNamespace(thread, netlink, nft, nftError);
    } catch (RuntimeException | UnsatisfiedLinkError e) {
      thread.close();
      throw e instanceof Unavailable u ? u
          : new Unavailable("cannot open a scratch network namespace: " + e.getMessage(), false, e);
    }
  }

  @Override
  public String kernelRelease() {
    return release;
  }

  /** {@code uname -r}, from /proc (empty-safe). */
  static String currentRelease() {
    try {
      return Files.readString(Path.of("/proc/sys/kernel/osrelease")).trim();
    } catch (IOException e) {
      return System.getProperty("os.version", "unknown");
    }
  }

  /** Judged by the version: an older kernel ignores CTA_FILTER rather than refusing it, so it cannot be tried. */
  static Optional<String> conntrackFilteredDump(String release) {
    return KernelVersion.atLeast(release, 5, 8) ? Optional.empty()
        : Optional.of("Linux " + release + " is older than 5.8 (judged by the version: an older kernel ignores the"
            + " filter rather than refusing it)");
  }

  @Override
  public Optional<String> missing(Feature feature) {
    try {
      return switch (feature) {
        case NFT_INET_NAT -> script(feature);
        case NFT_INTERVAL_SETS -> script(feature);
        case NFT_ELEMENT_COMMENTS -> elementComments();
        case NFT_FIB -> script(feature);
        case NFT_CT_MARK -> script(feature);
        case NFT_ELEMENT_TIMEOUTS -> script(feature);
        case NFT_OBJECT_COMMENTS -> objectComments();
        case NFT_INET_ROUTE_CHAIN -> script(feature);
        case RULE_PROTOCOL_FWMASK -> ruleProtocolAndMask();
        case THROW_ROUTES -> throwRoutes();
        case VXLAN_GPE -> vxlanGpe();
        case DEVICE_CONF -> deviceConf();
        case CONNTRACK_FILTERED_DUMP -> conntrackFilteredDump(release);
      };
    } catch (RuntimeException e) {
      return Optional.of(String.valueOf(e.getMessage()));
    }
  }

  /**
   * Every script in one transaction first (one libnftables run instead of eight: the probe's cost is mostly per run);
   * only if the kernel refuses it is each tried alone, to name what it refused. A refused transaction leaves nothing.
   */
  private Optional<String> script(Feature feature) {
    if (nft.isEmpty()) {
      return Optional.of(nftError);
    }
    if (allScripts.isEmpty()) {
      try {
        nft.get().runScript(String.join("", SCRIPTS.values()));
        allScripts = Optional.of(true);
      } catch (RuntimeException e) {
        allScripts = Optional.of(false);
      }
    }
    if (!allScripts.get()) {
      nft.get().runScript(SCRIPTS.get(feature));
    }
    return Optional.empty();
  }

  private Optional<String> elementComments() {
    Optional<String> refused = script(Feature.NFT_ELEMENT_COMMENTS);
    if (refused.isPresent()) {
      return refused;
    }
    // An older kernel drops attributes it does not know: the comment must come back to count.
    for (JsonNode item : nft.get().listTable("inet", "esa_probe_comments").path("nftables")) {
      for (JsonNode e : item.path("map").path("elem")) {
        if (e.path(0).path("elem").path("comment").asText("").equals("ns/name")) {
          return Optional.empty();
        }
      }
    }
    return Optional.of("the kernel accepted the element but did not keep its comment");
  }

  private Optional<String> objectComments() {
    Optional<String> refused = script(Feature.NFT_OBJECT_COMMENTS);
    if (refused.isPresent()) {
      return refused;
    }
    // Read as the agent reads its counters (nfnetlink, NoHostNftables), not through nft's JSON.
    boolean kept = nft.get().countersIfPresent("inet", "esa_probe_counters").orElse(java.util.List.of()).stream()
        .anyMatch(c -> c.comment().filter("ns/name"::equals).isPresent());
    return kept ? Optional.empty() : Optional.of("the kernel accepted the counter but did not keep its comment");
  }

  private Optional<String> ruleProtocolAndMask() {
    Rule rule = Rule.lookup(IpFamily.V4, PRIORITY, TABLE).fwmark(0x01000000L, 0x3f000000L).protocol(PROTOCOL);
    netlink.addRule(rule);
    // A kernel before 4.17 ignores FRA_PROTOCOL rather than refusing it: it has to come back.
    boolean kept = netlink.listRules(IpFamily.V4).stream().anyMatch(r -> r.priority() == PRIORITY
        && r.protocol() == PROTOCOL && r.fwmask().isPresent() && r.fwmask().getAsLong() == 0x3f000000L);
    return kept ? Optional.empty() : Optional.of("the rule was added without its protocol or mask: " + rule);
  }

  private Optional<String> throwRoutes() {
    Route route = Route.of(IpFamily.V4, TABLE, RouteType.THROW, Optional.of(IpPrefix.parse("10.0.0.0/8")))
        .protocol(PROTOCOL);
    netlink.addRoute(route);
    boolean listed = netlink.listRoutes(IpFamily.V4, RouteType.THROW, PROTOCOL).stream()
        .anyMatch(r -> r.table() == TABLE && r.destination().equals(route.destination()));
    return listed ? Optional.empty() : Optional.of("the throw route was added but not listed back: " + route);
  }

  private Optional<String> vxlanGpe() {
    Link link = netlink.createVxlan(new VxlanDevice("egress-vx", 4799, true, 0, "egress-service-agent probe"));
    if (link.vxlan().isEmpty() || !link.vxlan().get().gpe()) {
      return Optional.of("the device was made without GPE: " + link);
    }
    netlink.addRoute(Route.of(IpFamily.V4, TABLE + 1, RouteType.UNICAST, Optional.empty()).dev(link.index())
        .protocol(PROTOCOL).encap(new RouteEncap(IpPrefix.parse("192.0.2.1"), 1, true)));
    return Optional.empty();
  }

  private Optional<String> deviceConf() {
    int lo = netlink.listLinks().stream().filter(l -> l.name().equals("lo")).mapToInt(Link::index).findFirst()
        .orElse(1);
    netlink.setIpv4DeviceConf(lo, RtNetlink.IPV4_DEVCONF_SRC_VMARK, 1);
    netlink.setIpv4DeviceConf(lo, Routing.IPV4_DEVCONF_RP_FILTER, 2);
    // /proc/sys/net shows the namespace of the thread that opens it: this namespace, on this thread.
    String value = thread.call(() -> Files.readString(Path.of("/proc/sys/net/ipv4/conf/lo/src_valid_mark")).trim());
    return value.equals("1") ? Optional.empty() : Optional.of("src_valid_mark reads " + value + " after setting 1");
  }

  @Override
  public void close() {
    try {
      nft.ifPresent(NftClient::close);
      netlink.close();
    } finally {
      thread.close();
    }
  }
}
