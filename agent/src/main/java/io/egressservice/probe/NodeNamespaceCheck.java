package io.egressservice.probe;

import io.egressservice.netlink.Routing;
import com.fasterxml.jackson.databind.JsonNode;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.netlink.Link;
import io.egressservice.netlink.NetlinkException;
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
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link FeatureCheck} for where the agent really runs: the node's own network namespace, with CAP_NET_ADMIN
 * and without the CAP_SYS_ADMIN a {@link ScratchNamespace} needs. It never writes anything a packet can meet:
 *
 * <ul>
 *   <li>nftables constructs go through libnftables' check mode ({@code nft -c}): the kernel receives the batch,
 *       validates each command and aborts the transaction; the tables are also {@code dormant}, so not even the
 *       aborted transaction hooks a chain;
 *   <li>the two comments that must be read back (an older kernel silently drops attributes it does not know) are
 *       committed in a table {@code esa_probe_readback} with a map or a counter and no chain: a table without a
 *       base chain is on no hook, so no packet is evaluated against it; it is deleted as soon as it is listed. It is
 *       not dormant: nft 1.0.6 prints a dormant table's flags as broken JSON, which would break every JSON listing
 *       of the ruleset (the agent's included) while it exists;
 *   <li>the rule selects {@code from 192.0.2.254} (TEST-NET-1, never routed) with a fwmark, at priority {@value
 *       #RULE_PRIORITY} (after the default table's 32767, where the agent's rules never are) and looks up an empty
 *       table: even a packet that matched would fall through to the next rule;
 *   <li>the throw route and the encapsulated route go to a table no rule points to, for TEST-NET-1 addresses;
 *   <li>the VXLAN-GPE device {@value #DEVICE} is created down (a down VXLAN device has no UDP socket) and deleted.
 * </ul>
 *
 * Everything carries protocol {@value #PROTOCOL} (not the agent's 201, so a running agent never takes it for its
 * own) and is removed right after its check, on every path; a leftover of a probe killed half-way (these exact
 * objects only) is removed when the next one opens.
 *
 * <p>Those names are fixed, so two probes in one namespace (two agents starting on a node at once: a DaemonSet's
 * maxSurge, {@code apply} run by hand while the agent starts) would fail on each other's objects or remove them as
 * leftovers. The probes therefore take turns: {@link #open()} takes the namespace's {@link ProbeLock} before it
 * touches anything, leftovers included, and {@link #close()} gives it back. A probe that finds the lock held waits
 * for it, at most {@link #LOCK_WAIT}; still held then, it does not probe at all ({@link
 * ScratchNamespace.Unavailable}: the agent starts unprobed with a WARN naming the lock), rather than refusing to
 * start. Any process in the node's namespace can hold the lock (every hostNetwork pod; abstract socket names have
 * no permissions), so refusing would let any of them keep the agent from ever starting; skipping bounds the worst
 * such a process can do to a delay of {@link #LOCK_WAIT} at each start (and the probe's own answers not being
 * there: a missing feature then shows as failed reconciles named by the kernel's error, as when libnftables cannot
 * be used). A real concurrent probe holds the lock for a fraction of a second (a few seconds on a cold, loaded
 * start), well inside the wait.
 */
public final class NodeNamespaceCheck implements FeatureCheck, AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(NodeNamespaceCheck.class);
  static final String DEVICE = "esa-probe0";
  static final String READBACK_TABLE = "esa_probe_readback";
  static final int PROTOCOL = 209;
  static final int RULE_PRIORITY = 40_000;
  /** Looked up by the probe's rule: stays empty. */
  static final int RULE_TABLE = 2_000_000_201;
  /** Holds the probe's routes for a moment: no rule points to it. */
  static final int ROUTE_TABLE = 2_000_000_202;
  static final IpPrefix RULE_SOURCE = IpPrefix.parse("192.0.2.254/32");
  static final IpPrefix THROW_DESTINATION = IpPrefix.parse("192.0.2.255/32");
  static final IpPrefix ENCAP_DESTINATION = IpPrefix.parse("192.0.2.253/32");
  /** Not the agent's 4799: two collect-metadata VXLAN devices with one port and the same flags cannot coexist. */
  private static final int[] DEVICE_PORTS = {47_990, 47_991};
  /** The longest a probe waits for another one in its namespace (see the class comment). */
  static final Duration LOCK_WAIT = Duration.ofSeconds(10);

  private final NetnsThread thread;
  private final ProbeLock lock;
  private final RtNetlink netlink;
  private final Optional<NftClient> nft;
  private final String nftError;
  private final String release;
  private Optional<Boolean> allScripts = Optional.empty();
  private Optional<Map<Feature, Optional<String>>> readBack = Optional.empty();
  /** DEVICE_CONF's answer when it was tried on the VXLAN-GPE check's device (one device made and deleted, not two). */
  private Optional<Optional<String>> deviceConfOnGpe = Optional.empty();

  private NodeNamespaceCheck(NetnsThread thread, ProbeLock lock, RtNetlink netlink, Optional<NftClient> nft,
      String nftError) {
    this.thread = thread;
    this.lock = lock;
    this.netlink = netlink;
    this.nft = nft;
    this.nftError = nftError;
    this.release = ScratchNamespace.currentRelease();
  }

  /**
   * Takes the namespace's probe lock (waiting up to {@link #LOCK_WAIT} for another probe), opens rtnetlink and
   * libnftables in the process's own namespace and removes an earlier probe's leftovers.
   *
   * @throws ScratchNamespace.Unavailable when it cannot probe, the lock still held by another process included
   */
  public static NodeNamespaceCheck open() {
    return open(Optional.empty(), LOCK_WAIT);
  }

  /** As {@link #open()} in the named namespace (tests), or the process's own when empty. */
  static NodeNamespaceCheck open(Optional<String> netns) {
    return open(netns, LOCK_WAIT);
  }

  /** As {@link #open(Optional)}, waiting at most {@code lockWait} for the lock. */
  static NodeNamespaceCheck open(Optional<String> netns, Duration lockWait) {
    NetnsThread thread = NetnsThread.enter(netns);
    ProbeLock lock = null;
    RtNetlink netlink = null;
    try {
      lock = ProbeLock.take(thread, lockWait);
      if (!lock.waited().isZero()) {
        LOG.info("kernel probe: waited {} ms for another probe in {} (lock @{})", lock.waited().toMillis(),
            thread.describe(), ProbeLock.NAME);
      }
      netlink = RtNetlink.open(thread);
      Optional<NftClient> nft;
      String nftError = "";
      try {
        nft = Optional.of(NftClient.open(thread));
      } catch (RuntimeException | UnsatisfiedLinkError e) {
        nft = Optional.empty();
        nftError = "libnftables cannot be used: " + e.getMessage();
      }
      NodeNamespaceCheck check = new NodeNamespaceCheck(thread, lock, netlink, nft, nftError);
      check.removeLeftovers();
      return check;
    } catch (RuntimeException | UnsatisfiedLinkError e) {
      if (netlink != null) {
        netlink.close();
      }
      if (lock != null) {
        lock.close();
      }
      thread.close();
      throw new ScratchNamespace.Unavailable("cannot probe in the node's network namespace: " + e.getMessage(),
          e instanceof NetlinkException.PermissionDenied, e);
    }
  }

  @Override
  public String kernelRelease() {
    return release;
  }

  @Override
  public Optional<String> missing(Feature feature) {
    try {
      return switch (feature) {
        case NFT_INET_NAT, NFT_INTERVAL_SETS, NFT_FIB, NFT_CT_MARK, NFT_ELEMENT_TIMEOUTS, NFT_INET_ROUTE_CHAIN ->
            checkScript(feature);
        case NFT_ELEMENT_COMMENTS, NFT_OBJECT_COMMENTS -> readBack().get(feature);
        case RULE_PROTOCOL_FWMASK -> ruleProtocolAndMask();
        case THROW_ROUTES -> throwRoutes();
        case VXLAN_GPE -> vxlanGpe();
        case DEVICE_CONF -> deviceConf();
        case CONNTRACK_FILTERED_DUMP -> ScratchNamespace.conntrackFilteredDump(release);
      };
    } catch (RuntimeException e) {
      return Optional.of(String.valueOf(e.getMessage()));
    }
  }

  /** The agent's construct for {@code feature}, in a dormant table, as libnftables' check mode sends it. */
  static String dormant(String script) {
    return script.replaceAll("(?m)^(table inet \\S+ \\{)$", "$1\n  flags dormant;");
  }

  /** All scripts in one checked batch; each alone only when the kernel refuses that, to name the feature. */
  private Optional<String> checkScript(Feature feature) {
    if (nft.isEmpty()) {
      return Optional.of(nftError);
    }
    if (allScripts.isEmpty()) {
      try {
        nft.get().checkScript(dormant(String.join("", ScratchNamespace.SCRIPTS.values())));
        allScripts = Optional.of(true);
      } catch (RuntimeException e) {
        allScripts = Optional.of(false);
      }
    }
    if (!allScripts.get()) {
      nft.get().checkScript(dormant(ScratchNamespace.SCRIPTS.get(feature)));
    }
    return Optional.empty();
  }

  /**
   * The comment features, from one committed table: a map element and a counter with comments, no chain. Listed
   * and deleted at once; deleted also when the listing fails.
   */
  private Map<Feature, Optional<String>> readBack() {
    if (readBack.isPresent()) {
      return readBack.get();
    }
    Map<Feature, Optional<String>> found = new EnumMap<>(Feature.class);
    if (nft.isEmpty()) {
      found.put(Feature.NFT_ELEMENT_COMMENTS, Optional.of(nftError));
      found.put(Feature.NFT_OBJECT_COMMENTS, Optional.of(nftError));
      readBack = Optional.of(found);
      return found;
    }
    NftClient client = nft.get();
    found.put(Feature.NFT_ELEMENT_COMMENTS, tryCommitted(client, """
        table inet esa_probe_readback {
          map snat_v4 { type ipv4_addr : ipv4_addr; elements = { 192.0.2.1 comment "ns/name" : 198.51.100.1 } }
        }
        """, () -> elementCommentKept(client)));
    found.put(Feature.NFT_OBJECT_COMMENTS, tryCommitted(client, """
        table inet esa_probe_readback {
          counter s0 { comment "ns/name"; }
        }
        """, () -> counterCommentKept(client)));
    readBack = Optional.of(found);
    return found;
  }

  private Optional<String> tryCommitted(NftClient client, String script, Supplier<Optional<String>> kept) {
    try {
      client.runScript(script);
      return kept.get();
    } catch (RuntimeException e) {
      return Optional.of(String.valueOf(e.getMessage()));
    } finally {
      deleteTable(client, READBACK_TABLE);
    }
  }

  private static Optional<String> elementCommentKept(NftClient client) {
    for (JsonNode item : client.listTable("inet", READBACK_TABLE).path("nftables")) {
      for (JsonNode e : item.path("map").path("elem")) {
        if (e.path(0).path("elem").path("comment").asText("").equals("ns/name")) {
          return Optional.empty();
        }
      }
    }
    return Optional.of("the kernel accepted the element but did not keep its comment");
  }

  private static Optional<String> counterCommentKept(NftClient client) {
    // Read as the agent reads its counters (nfnetlink, NoHostNftables), not through nft's JSON.
    boolean kept = client.countersIfPresent("inet", READBACK_TABLE).orElse(java.util.List.of()).stream()
        .anyMatch(c -> c.comment().filter("ns/name"::equals).isPresent());
    return kept ? Optional.empty() : Optional.of("the kernel accepted the counter but did not keep its comment");
  }


  private static void deleteTable(NftClient client, String name) {
    try {
      client.runScript("delete table inet " + name + "\n");
    } catch (RuntimeException e) {
      LOG.debug("kernel probe: deleting nft table {}: {}", name, e.getMessage());
    }
  }

  static Rule probeRule() {
    return Rule.lookup(IpFamily.V4, RULE_PRIORITY, RULE_TABLE).from(RULE_SOURCE).fwmark(0x01000000L, 0x3f000000L)
        .protocol(PROTOCOL);
  }

  private Optional<String> ruleProtocolAndMask() {
    Rule rule = probeRule();
    netlink.addRule(rule);
    try {
      boolean kept = netlink.listRules(IpFamily.V4).stream().anyMatch(r -> r.priority() == RULE_PRIORITY
          && r.protocol() == PROTOCOL && r.fwmask().isPresent() && r.fwmask().getAsLong() == 0x3f000000L);
      return kept ? Optional.empty() : Optional.of("the rule was added without its protocol or mask: " + rule);
    } finally {
      quietly(() -> netlink.deleteRule(rule), "delete rule " + rule);
    }
  }

  private Optional<String> throwRoutes() {
    Route route = Route.of(IpFamily.V4, ROUTE_TABLE, RouteType.THROW, Optional.of(THROW_DESTINATION))
        .protocol(PROTOCOL);
    netlink.addRoute(route);
    try {
      boolean listed = netlink.listRoutes(IpFamily.V4, RouteType.THROW, PROTOCOL).stream()
          .anyMatch(r -> r.table() == ROUTE_TABLE && r.destination().equals(route.destination()));
      return listed ? Optional.empty() : Optional.of("the throw route was added but not listed back: " + route);
    } finally {
      quietly(() -> netlink.deleteRoute(route), "delete route " + route);
    }
  }

  /**
   * The device, down, and an encapsulated route through {@code lo} (a route through a down device is refused;
   * the encapsulation is the kernel's lwtunnel, whatever the device) in the table no rule points to.
   */
  private Optional<String> vxlanGpe() {
    Link link = createDevice(true);
    try {
      if (link.vxlan().isEmpty() || !link.vxlan().get().gpe()) {
        return Optional.of("the device was made without GPE: " + link);
      }
      Route route = Route.of(IpFamily.V4, ROUTE_TABLE, RouteType.UNICAST, Optional.of(ENCAP_DESTINATION))
          .dev(loopback()).protocol(PROTOCOL).encap(new RouteEncap(IpPrefix.parse("192.0.2.1"), 1, true));
      netlink.addRoute(route);
      quietly(() -> netlink.deleteRoute(route), "delete route " + route);
      deviceConfOnGpe = Optional.of(deviceConfOn(link.index()));
      return Optional.empty();
    } finally {
      quietly(() -> netlink.deleteLink(link.index()), "delete link " + DEVICE);
    }
  }

  /** A down VXLAN device of the probe's (GPE when asked), on the first of its ports that no device holds. */
  private Link createDevice(boolean gpe) {
    NetlinkException.AlreadyExists last = null;
    for (int port : DEVICE_PORTS) {
      try {
        return netlink.createVxlanDown(new VxlanDevice(DEVICE, port, gpe, 0, "egress-service-agent probe"));
      } catch (NetlinkException.AlreadyExists e) {
        last = e; // another collect-metadata device with this port and flags
      }
    }
    throw last;
  }

  /**
   * src_valid_mark and rp_filter set on the probe's own device (down, so they steer nothing), src_valid_mark read
   * back: on the VXLAN-GPE check's device when there was one, else on a plain VXLAN device of its own. Without even
   * that to set them on, src_valid_mark of {@code lo} is written with the value
   * it has, which changes nothing.
   */
  private Optional<String> deviceConf() {
    if (deviceConfOnGpe.isPresent()) {
      return deviceConfOnGpe.get();
    }
    Optional<Link> device;
    try {
      device = Optional.of(createDevice(false));
    } catch (RuntimeException e) {
      device = Optional.empty();
    }
    if (device.isEmpty()) {
      String now = readConf("lo");
      netlink.setIpv4DeviceConf(loopback(), RtNetlink.IPV4_DEVCONF_SRC_VMARK, Integer.parseInt(now));
      return Optional.empty();
    }
    int index = device.get().index();
    try {
      return deviceConfOn(index);
    } finally {
      quietly(() -> netlink.deleteLink(index), "delete link " + DEVICE);
    }
  }

  private Optional<String> deviceConfOn(int index) {
    try {
      netlink.setIpv4DeviceConf(index, RtNetlink.IPV4_DEVCONF_SRC_VMARK, 1);
      netlink.setIpv4DeviceConf(index, Routing.IPV4_DEVCONF_RP_FILTER, 2);
      String value = readConf(DEVICE);
      return value.equals("1") ? Optional.empty() : Optional.of("src_valid_mark reads " + value + " after setting 1");
    } catch (RuntimeException e) {
      return Optional.of(String.valueOf(e.getMessage()));
    }
  }

  /** /proc/sys/net shows the namespace of the thread that opens it: the probed one, on its thread. */
  private String readConf(String device) {
    return thread.call(() -> {
      try {
        return Files.readString(Path.of("/proc/sys/net/ipv4/conf", device, "src_valid_mark")).trim();
      } catch (IOException e) {
        throw new IllegalStateException("cannot read src_valid_mark of " + device + ": " + e.getMessage(), e);
      }
    });
  }

  private int loopback() {
    return netlink.listLinks().stream().filter(l -> l.name().equals("lo")).mapToInt(Link::index).findFirst()
        .orElse(1);
  }

  /**
   * What a probe killed half-way can have left: only the exact objects this class writes (by name, or by protocol,
   * priority, table and TEST-NET address together), never anything the agent or another program owns. Only with
   * the lock held: without it these could be a live probe's objects.
   */
  private void removeLeftovers() {
    List<String> removed = new ArrayList<>();
    netlink.listLinks().stream().filter(l -> l.name().equals(DEVICE)).forEach(l -> {
      netlink.deleteLink(l.index());
      removed.add("link " + DEVICE);
    });
    netlink.listRules(IpFamily.V4).stream().filter(r -> r.protocol() == PROTOCOL && r.priority() == RULE_PRIORITY
        && r.table() == RULE_TABLE && r.source().equals(Optional.of(RULE_SOURCE))).forEach(r -> {
          netlink.deleteRule(r);
          removed.add("rule " + r);
        });
    for (RouteType type : List.of(RouteType.THROW, RouteType.UNICAST)) {
      netlink.listRoutes(IpFamily.V4, type, PROTOCOL).stream().filter(r -> r.table() == ROUTE_TABLE
          && r.destination().map(d -> d.equals(THROW_DESTINATION) || d.equals(ENCAP_DESTINATION)).orElse(false))
          .forEach(r -> {
            netlink.deleteRoute(r);
            removed.add("route " + r);
          });
    }
    // Only the readback table is ever committed; the others are removed too in case a future probe commits them.
    // "add" then "delete" removes each whether or not it is there, in one transaction, without listing the ruleset
    // (whose JSON another program's dormant table would break in nft 1.0.6).
    nft.ifPresent(client -> {
      StringBuilder script = new StringBuilder();
      for (String name : probeTables()) {
        script.append("add table inet ").append(name).append("\ndelete table inet ").append(name).append('\n');
      }
      client.runScript(script.toString());
    });
    if (!removed.isEmpty()) {
      LOG.info("kernel probe: removed what an earlier, interrupted probe left: {}", removed);
    }
  }

  /** Every nft table name the probes use. */
  static List<String> probeTables() {
    List<String> names = new ArrayList<>(List.of(READBACK_TABLE));
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?m)^table inet (\\S+) \\{")
        .matcher(String.join("", ScratchNamespace.SCRIPTS.values()));
    while (m.find()) {
      names.add(m.group(1));
    }
    return List.copyOf(names);
  }

  private static void quietly(Runnable removal, String what) {
    try {
      removal.run();
    } catch (RuntimeException e) {
      LOG.warn("kernel probe: could not {} (it is removed at the next start): {}", what, e.getMessage());
    }
  }

  /** Closes the probe's sockets, then gives the lock back: the next probe starts on a namespace without ours. */
  @Override
  public void close() {
    try {
      nft.ifPresent(NftClient::close);
      netlink.close();
    } finally {
      lock.close();
      thread.close();
    }
  }
}
