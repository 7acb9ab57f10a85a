package io.egressservice.nft;

import io.egressservice.kernel.Nftables;

import io.egressservice.nft.table.CarriedCounters;
import io.egressservice.nft.table.Expr;
import io.egressservice.nft.table.NftTable.Element;
import io.egressservice.nft.table.NftTable.SetChange;
import io.egressservice.nft.table.TableWriter;
import java.util.ArrayList;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;

/**
 * Who may use the steering port, what may leave through the tunnel, and that opted-in sources cannot be forged: a
 * table of its own, so the SNAT and no-host tables keep their shapes.
 *
 * <pre>
 * table inet egress_service_agent_guard {
 *   set nodes_v4 { type ipv4_addr; elements = { 192.168.50.11, ... } }           # every Node's InternalIPs
 *   set node_addresses_v4 { type ipv4_addr; elements = { ... } }                # every Node's addresses
 *   set in_cluster_v4 { type ipv4_addr; flags interval; elements = { ... } }
 *   set steered_v4 { type ipv4_addr; elements = { 10.128.2.5 } }                 # steered here by other nodes
 *   set ours_v4 { type ipv4_addr; elements = { 10.128.1.5, 10.128.2.5 } }        # every source we SNAT or steer
 *   set received_v4 { type ipv4_addr; elements = { 5.5.5.5 } }                  # LB IPs of the services steered here
 *   set away_v4 { type ipv4_addr; elements = { 10.128.1.7 } }                   # local sources steered to their host
 *   set underlay { type ifname; elements = { "eth0" } }                       # devices routed to the other Nodes
 *   set senders_v4 { typeof ip saddr . @th,224,32; elements = { 192.168.50.12 . 0x0a800205 } }
 *                                                 # (outer node address, inner source): 10.128.2.5 from node-b
 *   chain input {                                      # the node itself
 *     iifname "egress-vx" counter name "tunnel" drop                            # no pod's services through it
 *     udp dport 4799 ip saddr != @nodes_v4 counter name "port" drop             # only Nodes may steer
 *     udp dport 4799 fib saddr . iif oif missing counter name "port" drop       # ... over their own route
 *     udp dport 4799 iifname != @underlay counter name "port" drop              # ... on the node network's device
 *     udp dport 4799 meta nfproto ipv4 @th,88,8 != 0x1 counter name "forged" drop  # GPE: IPv4 in IPv4 only
 *     udp dport 4799 ip saddr . @th,224,32 != @senders_v4 counter name "forged" drop  # a source from its own node
 *   }
 *   chain forward {
 *     udp dport 4799 ip daddr @node_addresses_v4 counter name "port" drop       # no pod reaches the port
 *     iifname "egress-vx" ip saddr @steered_v4 ip daddr != @in_cluster_v4 accept
 *     iifname "egress-vx" ip saddr @received_v4 ip daddr != @in_cluster_v4 accept  # a planned move's hand-over
 *     iifname "egress-vx" counter name "tunnel" drop                            # nothing else out of the tunnel
 *     iifname != "egress-vx" ip saddr @steered_v4 ip daddr != @in_cluster_v4 ct direction original
 *         counter name "spoofed" drop
 *     iifname != "egress-vx" ip saddr @ours_v4 ip daddr != @in_cluster_v4 ct direction original
 *         fib saddr . iif oif missing counter name "spoofed" drop                # our sources only from their link
 *     oifname != "egress-vx" ip saddr @away_v4 ip daddr != @in_cluster_v4 ct direction original
 *         counter name "unsteered" drop                                        # steered: out only through the tunnel
 *   }
 * }
 * </pre>
 *
 * (and the same for IPv6). Without a steering port (steering off) only the last two rules are written. The
 * reverse-path check is nftables' {@code fib} expression (Linux 4.10 and later, IPv4 and IPv6; RHEL 9's 5.14 has
 * it): it asks the node's own routes, for our sources alone, so the node's {@code rp_filter} settings stay as they
 * are and the traffic of sources that did not opt in is never looked at. Only original directions are checked: the
 * replies of an endpoint to connections made to it (the Service's own ingress: a LoadBalancer connection DNATed to
 * a pod on another node comes back over the pod network, not the tunnel) keep their conntrack NAT; forging one
 * needs that connection's exact tuple (and, for TCP, its sequence numbers).
 *
 * <p>The port accepts an inner source only from the Node it lives on ({@code senders_}): the pairs (outer source,
 * inner source) the plan knows, matched before decapsulation on the UDP datagram itself. The inner header's source is
 * read as raw transport-header payload behind UDP (8 bytes) and VXLAN-GPE (8 bytes, no inner Ethernet): bits 224-255
 * for IPv4, 192-319 for IPv6, where the GPE next-protocol byte (bits 88-95) says 1 (IPv4) under an IPv4 outer header
 * and 2 (IPv6) under IPv6, as the agent's own routes send it; every other combination (IPv6 in IPv4, Ethernet, NSH)
 * is dropped. Raw payload and concatenated set keys are in every kernel since 4.1 (RHEL 9's 5.14 has both); a
 * {@code typeof} with a raw payload needs nftables 1.0.x userspace (the image's libnftables 1.0.6 writes it). A
 * forged outer source can still pass with an inner source of the Node it forges, and no other: one Node's pods.
 *
 * <p>The tunnel lets out the LB IPs of the services steered here ({@code received_}, and their pairs in {@code
 * senders_}) only while a planned move is under way: a flow of the old host's own pod that the old host SNATed to the
 * LB IP before it switched to steering keeps that NAT (its conntrack entry) until the old host restarts it, and
 * meanwhile arrives here with the LB IP as its source, from the old host's address. Outside a move, no Node sends it.
 *
 * <p>A source this node steers to its host ({@code away_}) leaves the node only through the tunnel. Its rule looks
 * up a steering table whose one route goes over {@code egress-vx}; while that route is missing (the device deleted
 * by hand, or being re-created) the lookup finds nothing and the kernel goes on to the node's own routes, so the
 * packet would leave through the node's uplink with the node's address (the CNI masquerades it): the service's
 * identity lost to a partner's firewall. Dropped instead, until the device is back; a brief drop the sender retries,
 * never a packet under another source. Replies of connections made to the endpoint are original in the other
 * direction and pass.
 *
 * <p>The sets of sources change by element ({@link #updateElements}: O(change)); the table is written whole, in
 * one transaction that replaces the old one (no moment without it), only when its shape changes: the port, the
 * Nodes' addresses, the devices that reach them or the in-cluster destinations. The counters' values before a rewrite are carried over.
 *
 * <p>Element changes, holds and removal are libnftables-json ({@link TableWriter}); the whole table alone is an nft
 * script, because libnftables-json of nftables 1.0.6 cannot declare the {@code senders_} sets: it reads a set's key
 * only as data type names, and a raw payload's type ({@code integer}) has no size there ("can not use variable sized
 * data types"); the {@code typeof} key object came to the JSON parser in later nftables releases.
 */
public final class GuardNftables {
  public static final String TABLE = "egress_service_agent_guard";
  /** Counter names (the keys of {@link #droppedPackets()}). */
  public static final String PORT = "port";
  public static final String TUNNEL = "tunnel";
  public static final String SPOOFED = "spoofed";
  /** A tunnel datagram whose inner source is not one its outer source's Node may send (or not IP of its family). */
  public static final String FORGED = "forged";
  /** A steered source about to leave other than through the tunnel (its steering route missing). */
  public static final String UNSTEERED = "unsteered";
  /** New connections from outside the cluster to a source while its flows restart (see holdNewInbound). */
  public static final String TAKEOVER = "takeover";
  private static final String RESTARTING = "restarting_";

  /**
   * The table's structure.
   *
   * @param steerPort the steering device's UDP port; empty with steering off (no port, tunnel or node rules)
   * @param nodeInternalIps the outer sources the port accepts
   * @param nodeAddresses the destinations whose port forwarded packets may not reach
   * @param inCluster destinations inside the cluster (not "leaving")
   * @param underlay the devices this node routes the other Nodes' InternalIPs through (observed): the only ones the
   *     port accepts datagrams on; none, nothing is accepted
   */
  public record Shape(OptionalInt steerPort, List<IpPrefix> nodeInternalIps, List<IpPrefix> nodeAddresses,
      List<IpPrefix> inCluster, List<String> underlay) {
    public Shape {
      Objects.requireNonNull(steerPort);
      nodeInternalIps = List.copyOf(nodeInternalIps);
      nodeAddresses = List.copyOf(nodeAddresses);
      inCluster = List.copyOf(inCluster);
      underlay = underlay.stream().distinct().sorted().toList();
    }

    /** Without underlay devices (steering off, or a table that accepts no datagram on the port). */
    public Shape(OptionalInt steerPort, List<IpPrefix> nodeInternalIps, List<IpPrefix> nodeAddresses,
        List<IpPrefix> inCluster) {
      this(steerPort, nodeInternalIps, nodeAddresses, inCluster, List.of());
    }
  }

  /** A (outer node address, inner source) pair the port accepts; both of one family. */
  public record Sender(IpPrefix node, IpPrefix inner) {
    public Sender {
      if (node.family() != inner.family()) {
        throw new IllegalArgumentException("outer " + node + " and inner " + inner + " differ in family");
      }
    }

    /** As an element of {@code senders_v4/v6}: the address, and the inner source as the raw payload's number. */
    String element() {
      return node.addressText() + " . " + innerNumber();
    }

    /** The same as libnftables-json writes it (a number as hex text: an IPv6 address outgrows JSON's integers). */
    Element jsonElement() {
      return Element.of(Expr.concat(Expr.text(node.addressText()), Expr.text(innerNumber())));
    }

    private String innerNumber() {
      StringBuilder hex = new StringBuilder("0x");
      for (byte b : inner.addressBytes()) {
        hex.append(Character.forDigit((b >> 4) & 0xf, 16)).append(Character.forDigit(b & 0xf, 16));
      }
      return hex.toString();
    }
  }

  /**
   * The sources the table's sets hold.
   *
   * @param steered remote endpoints other nodes steer to this node
   * @param ours every source this node SNATs or steers
   * @param received the LB IPs of the services steered here
   * @param away the local sources this node steers to their host
   * @param senders the (outer node address, inner source) pairs the steering port accepts
   */
  public record Sources(Collection<IpPrefix> steered, Collection<IpPrefix> ours, Collection<IpPrefix> received,
      Collection<IpPrefix> away, Collection<Sender> senders) {
    public static final Sources NONE = new Sources(List.of(), List.of(), List.of(), List.of());

    public Sources {
      steered = List.copyOf(steered);
      ours = List.copyOf(ours);
      received = List.copyOf(received);
      away = List.copyOf(away);
      senders = List.copyOf(senders);
    }

    /** Without tunnel senders. */
    public Sources(Collection<IpPrefix> steered, Collection<IpPrefix> ours, Collection<IpPrefix> received,
        Collection<IpPrefix> away) {
      this(steered, ours, received, away, List.of());
    }

    Map<String, Collection<IpPrefix>> bySet() {
      Map<String, Collection<IpPrefix>> out = new java.util.LinkedHashMap<>();
      out.put("steered_", steered);
      out.put("ours_", ours);
      out.put("received_", received);
      out.put("away_", away);
      return out;
    }
  }

  private final Nftables nft;
  private final CarriedCounters counters;
  /** The shape as last written; empty: unknown (written whole next); {@code Optional.of(Optional.empty())}: absent. */
  private Optional<Optional<Shape>> writtenShape = Optional.empty();
  /** What each set holds as last written, by set name prefix ({@code steered_}, {@code ours_}, ...). */
  private final Map<String, Set<IpPrefix>> written = new HashMap<>();
  /** The pairs {@code senders_} holds, as last written. */
  private final Set<Sender> writtenSenders = new HashSet<>();

  public GuardNftables(Nftables nft) {
    this.nft = Objects.requireNonNull(nft);
    this.counters = CarriedCounters.byName(nft, "inet", TABLE);
  }

  /**
   * Makes the table hold {@code want} (empty: no table) with exactly these sources; with {@code verify}, first
   * checks that a table it believes present still is (written whole otherwise).
   *
   * @param steered remote endpoints other nodes steer to this node
   * @param ours every source this node SNATs or steers
   */
  public void sync(Optional<Shape> want, Collection<IpPrefix> steered, Collection<IpPrefix> ours, boolean verify) {
    sync(want, new Sources(steered, ours, List.of(), List.of()), verify);
  }

  /** As {@link #sync(Optional, Collection, Collection, boolean)}, with every set's sources. */
  public synchronized void sync(Optional<Shape> want, Sources sources, boolean verify) {
    // Its counters tell whether the table is there without listing its sets (thousands of sources).
    if (verify && writtenShape.isPresent() && writtenShape.get().isPresent()
        && !nft.tablePresent("inet", TABLE)) {
      writtenShape = Optional.empty(); // someone deleted it: written whole
    }
    if (writtenShape.isPresent() && writtenShape.get().equals(want)) {
      if (want.isPresent()) {
        Map<String, List<IpPrefix>> added = new HashMap<>();
        Map<String, List<IpPrefix>> removed = new HashMap<>();
        sources.bySet().forEach((set, now) -> {
          Set<IpPrefix> was = written.getOrDefault(set, Set.of());
          Set<IpPrefix> is = new HashSet<>(now);
          added.put(set, is.stream().filter(p -> !was.contains(p)).toList());
          removed.put(set, was.stream().filter(p -> !is.contains(p)).toList());
        });
        Set<Sender> senders = new HashSet<>(sources.senders());
        updateElements(added, removed, senders.stream().filter(p -> !writtenSenders.contains(p)).toList(),
            writtenSenders.stream().filter(p -> !senders.contains(p)).toList());
      }
      return;
    }
    if (writtenShape.isEmpty() || writtenShape.get().isPresent()) {
      counters.carry();
    }
    writtenShape = Optional.empty();
    written.clear();
    writtenSenders.clear();
    if (want.isEmpty()) {
      nft.run(TableWriter.remove("inet", TABLE));
    } else {
      nft.runScript("add table inet " + TABLE + "\ndelete table inet " + TABLE + "\n" + script(want.get(), sources));
    }
    writtenShape = Optional.of(want);
    if (want.isPresent()) {
      sources.bySet().forEach((set, now) -> written.put(set, new HashSet<>(now)));
      if (want.get().steerPort().isPresent()) {
        writtenSenders.addAll(sources.senders());
      }
    }
  }

  /**
   * For {@code hold}, new connections from outside the cluster to these sources are dropped ({@link #TAKEOVER}):
   * while a source's flows restart (their conntrack entries deleted so the next packet takes the new NAT), an answer
   * still in flight for the old flow (through the old host, say) would otherwise create an entry from outside to the
   * source, and the source's own packets would then run in that entry's reply direction: no SNAT, past every guard
   * (which match original directions, so that answers to connections made to a pod's own address pass). The kernel
   * expires the elements; a legitimate new inbound connection in that moment is retried by its sender. Returns false,
   * changing nothing, when the table is not known to be present.
   */
  public synchronized boolean holdNewInbound(Collection<IpPrefix> sources, java.time.Duration hold) {
    if (writtenShape.isEmpty() || writtenShape.get().isEmpty() || sources.isEmpty()) {
      return false;
    }
    // add refreshes nothing of an element already there; delete first is not possible without knowing it is
    List<SetChange> changes = new ArrayList<>();
    for (IpFamily f : IpFamily.values()) {
      changes.add(new SetChange(RESTARTING + fam(f), sources.stream().filter(p -> p.family() == f)
          .map(IpPrefix::addressText).distinct().map(a -> Element.of(a).withTimeout(hold)).toList(), List.of()));
    }
    nft.run(TableWriter.elementChanges("inet", TABLE, changes));
    return true;
  }

  /**
   * The fast path: the table keeps its shape, these sources come and go (one transaction). Returns false, changing
   * nothing, when the table is not known to be present: the caller then runs {@link #sync}.
   */
  public boolean updateElements(Collection<IpPrefix> steeredAdded, Collection<IpPrefix> steeredRemoved,
      Collection<IpPrefix> oursAdded, Collection<IpPrefix> oursRemoved) {
    return updateElements(new Sources(steeredAdded, oursAdded, List.of(), List.of()),
        new Sources(steeredRemoved, oursRemoved, List.of(), List.of()));
  }

  /** As the other, for every set: what comes into each and what leaves it. */
  public boolean updateElements(Sources added, Sources removed) {
    return updateElements(added.bySet(), removed.bySet(), added.senders(), removed.senders());
  }

  private synchronized boolean updateElements(Map<String, ? extends Collection<IpPrefix>> added,
      Map<String, ? extends Collection<IpPrefix>> removed, Collection<Sender> sendersAdded,
      Collection<Sender> sendersRemoved) {
    if (writtenShape.isEmpty() || writtenShape.get().isEmpty()) {
      return false;
    }
    boolean port = writtenShape.get().get().steerPort().isPresent();
    List<Sender> sendersIn = port ? sendersAdded.stream().filter(p -> !writtenSenders.contains(p)).distinct().toList()
        : List.of();
    List<Sender> sendersOut = sendersRemoved.stream().filter(writtenSenders::contains).distinct().toList();
    List<SetChange> changes = new ArrayList<>();
    // Deletes come first in the transaction: a source that stops being ours is never accepted a moment longer.
    for (IpFamily f : IpFamily.values()) {
      for (String set : Sources.NONE.bySet().keySet()) {
        Set<IpPrefix> held = written.getOrDefault(set, Set.of());
        changes.add(new SetChange(set + fam(f),
            of(added.get(set), f).filter(p -> !held.contains(p)).map(p -> Element.of(p.addressText())).toList(),
            of(removed.get(set), f).filter(held::contains).map(p -> Element.of(p.addressText())).toList()));
      }
      changes.add(new SetChange("senders_" + fam(f),
          sendersIn.stream().filter(p -> p.node().family() == f).map(Sender::jsonElement).toList(),
          sendersOut.stream().filter(p -> p.node().family() == f).map(Sender::jsonElement).toList()));
    }
    if (changes.stream().allMatch(SetChange::isEmpty)) {
      return true;
    }
    try {
      nft.run(TableWriter.elementChanges("inet", TABLE, changes));
    } catch (RuntimeException e) {
      writtenShape = Optional.empty(); // the next sync writes it whole
      throw e;
    }
    removed.forEach((set, of) -> written.computeIfAbsent(set, k -> new HashSet<>()).removeAll(of));
    added.forEach((set, of) -> written.computeIfAbsent(set, k -> new HashSet<>()).addAll(of));
    sendersOut.forEach(writtenSenders::remove);
    writtenSenders.addAll(sendersIn);
    return true;
  }

  /** The distinct addresses of {@code family} among {@code all} (none when absent). */
  private static java.util.stream.Stream<IpPrefix> of(Collection<IpPrefix> all, IpFamily family) {
    return all == null ? java.util.stream.Stream.empty() : all.stream().filter(p -> p.family() == family).distinct();
  }

  /** The sources the table's {@code away_} sets hold, as last written (empty when the table is not known). */
  public synchronized Set<IpPrefix> writtenAway() {
    return writtenShape.isPresent() && writtenShape.get().isPresent() ? Set.copyOf(written.getOrDefault("away_", Set.of()))
        : Set.of();
  }

  /** Forgets what was written: the next {@link #sync} writes the table whole. */
  public synchronized void invalidate() {
    writtenShape = Optional.empty();
  }

  /** Packets dropped since this instance started, by counter ({@link #PORT}, {@link #TUNNEL}, {@link #SPOOFED}, {@link #UNSTEERED}). */
  public synchronized Map<String, Long> droppedPackets() {
    return counters.total(writtenShape.isEmpty() || writtenShape.get().isPresent());
  }

  /** Removes the table (cleanup). */
  public synchronized void delete() {
    nft.run(TableWriter.remove("inet", TABLE));
    writtenShape = Optional.of(Optional.empty());
    written.clear();
    writtenSenders.clear();
  }

  /** The whole table. */
  private static String script(Shape shape, Sources sources) {
    String dev = EgressNftables.STEERING_DEVICE;
    StringBuilder sb = new StringBuilder("table inet ").append(TABLE).append(" {\n");
    sb.append("  counter ").append(PORT).append(" { comment \"steering port: not from a Node\" }\n");
    sb.append("  counter ").append(TUNNEL).append(" { comment \"out of egress-vx: not a steered endpoint leaving\" }\n");
    sb.append("  counter ").append(SPOOFED).append(" { comment \"an opted-in source from the wrong interface\" }\n");
    sb.append("  counter ").append(FORGED)
        .append(" { comment \"steering port: an inner source its outer source's Node does not send\" }\n");
    sb.append("  counter ").append(UNSTEERED)
        .append(" { comment \"a steered source about to leave other than through egress-vx\" }\n");
    sb.append("  counter ").append(TAKEOVER)
        .append(" { comment \"from outside to a source whose flows restart: would take its flow over\" }\n");
    StringBuilder input = new StringBuilder();
    StringBuilder forward = new StringBuilder();
    if (shape.steerPort().isPresent()) {
      int port = shape.steerPort().getAsInt();
      input.append("    iifname \"").append(dev).append("\" counter name \"").append(TUNNEL).append("\" drop\n");
      for (IpFamily f : IpFamily.values()) {
        set(sb, "nodes_", f, shape.nodeInternalIps());
        set(sb, "node_addresses_", f, shape.nodeAddresses());
        input.append("    udp dport ").append(port).append(' ').append(ip(f)).append(" saddr != @nodes_").append(fam(f))
            .append(" counter name \"").append(PORT).append("\" drop\n");
        forward.append("    udp dport ").append(port).append(' ').append(ip(f)).append(" daddr @node_addresses_")
            .append(fam(f)).append(" counter name \"").append(PORT).append("\" drop\n");
      }
      // A Node's address from the wrong link (an uplink's router forging it) is no Node (Linux 4.10: fib).
      input.append("    udp dport ").append(port).append(" fib saddr . iif oif missing counter name \"").append(PORT)
          .append("\" drop\n");
      // Nor from a device that does not reach the Nodes (lo among them: Linux 6.15 and later skip the fib lookup for
      // loopback and for packets an early-demuxed socket took, so fib alone lets those through).
      sb.append("  set underlay { type ifname; ").append(shape.underlay().isEmpty() ? ""
          : "elements = { " + String.join(", ", shape.underlay().stream().map(GuardNftables::quoted).toList()) + " } ")
          .append("}\n");
      input.append("    udp dport ").append(port).append(" iifname != @underlay counter name \"").append(PORT)
          .append("\" drop\n");
      // The inner packet as the agent's routes send it: IPv4 in IPv4 (GPE next protocol 1), IPv6 in IPv6 (2).
      input.append("    udp dport ").append(port).append(" meta nfproto ipv4 @th,88,8 != 0x1 counter name \"")
          .append(FORGED).append("\" drop\n");
      input.append("    udp dport ").append(port).append(" meta nfproto ipv6 @th,88,8 != 0x2 counter name \"")
          .append(FORGED).append("\" drop\n");
      for (IpFamily f : IpFamily.values()) {
        String inner = innerSource(f);
        sb.append("  set senders_").append(fam(f)).append(" { typeof ").append(ip(f)).append(" saddr . ").append(inner)
            .append("; ");
        List<String> of = sources.senders().stream().filter(p -> p.node().family() == f).map(Sender::element)
            .distinct().sorted().toList();
        sb.append(of.isEmpty() ? "" : "elements = { " + String.join(", ", of) + " } ").append("}\n");
        input.append("    udp dport ").append(port).append(' ').append(ip(f)).append(" saddr . ").append(inner)
            .append(" != @senders_").append(fam(f)).append(" counter name \"").append(FORGED).append("\" drop\n");
      }
      for (IpFamily f : IpFamily.values()) {
        forward.append("    iifname \"").append(dev).append("\" ").append(ip(f)).append(" saddr @steered_").append(fam(f))
            .append(' ').append(ip(f)).append(" daddr != @in_cluster_").append(fam(f)).append(" accept\n");
        forward.append("    iifname \"").append(dev).append("\" ").append(ip(f)).append(" saddr @received_").append(fam(f))
            .append(' ').append(ip(f)).append(" daddr != @in_cluster_").append(fam(f)).append(" accept\n");
      }
      forward.append("    iifname \"").append(dev).append("\" counter name \"").append(TUNNEL).append("\" drop\n");
    }
    for (IpFamily f : IpFamily.values()) {
      List<IpPrefix> inCluster = shape.inCluster().stream().filter(p -> p.family() == f).toList();
      List<String> ranges = EgressNftables.merge(inCluster.stream().map(EgressNftables.IpRange::of).toList()).stream()
          .map(r -> r.first().equals(r.last()) ? r.first().addressText()
              : r.first().addressText() + "-" + r.last().addressText())
          .toList();
      sb.append("  set in_cluster_").append(fam(f)).append(" { type ").append(type(f)).append("; flags interval; ")
          .append(ranges.isEmpty() ? "" : "elements = { " + String.join(", ", ranges) + " } ").append("}\n");
      // Declared even when empty, so that sources come and go by element, not by a rewrite.
      sources.bySet().forEach((set, of) -> set(sb, set, f, List.copyOf(of)));
      // Sources whose flows restart now (holdNewInbound): elements expire by themselves (Linux 4.1: set timeouts).
      sb.append("  set ").append(RESTARTING).append(fam(f)).append(" { type ").append(type(f))
          .append("; flags timeout; }\n");
      forward.append("    ct state new ").append(ip(f)).append(" daddr @").append(RESTARTING).append(fam(f))
          .append(' ').append(ip(f)).append(" saddr != @in_cluster_").append(fam(f)).append(" counter name \"")
          .append(TAKEOVER).append("\" drop\n");
      String leaves = ip(f) + " daddr != @in_cluster_" + fam(f);
      // A steered endpoint is not on this node: out of the cluster it comes only out of the tunnel.
      forward.append("    iifname != \"").append(dev).append("\" ").append(ip(f)).append(" saddr @steered_")
          .append(fam(f)).append(' ').append(leaves).append(" ct direction original counter name \"").append(SPOOFED).append("\" drop\n");
      forward.append("    iifname != \"").append(dev).append("\" ").append(ip(f)).append(" saddr @ours_").append(fam(f))
          .append(' ').append(leaves).append(" ct direction original fib saddr . iif oif missing counter name \"").append(SPOOFED)
          .append("\" drop\n");
      forward.append("    oifname != \"").append(dev).append("\" ").append(ip(f)).append(" saddr @away_").append(fam(f))
          .append(' ').append(leaves).append(" ct direction original counter name \"").append(UNSTEERED)
          .append("\" drop\n");
    }
    if (input.length() > 0) {
      sb.append("  chain input {\n    type filter hook input priority filter - 10; policy accept;\n").append(input)
          .append("  }\n");
    }
    sb.append("  chain forward {\n    type filter hook forward priority filter - 10; policy accept;\n").append(forward)
        .append("  }\n");
    sb.append("}\n");
    return sb.toString();
  }

  private static void set(StringBuilder sb, String prefix, IpFamily f, List<IpPrefix> all) {
    List<String> of = all.stream().filter(p -> p.family() == f).map(IpPrefix::addressText).distinct().sorted().toList();
    sb.append("  set ").append(prefix).append(fam(f)).append(" { type ").append(type(f)).append("; ")
        .append(of.isEmpty() ? "" : "elements = { " + String.join(", ", of) + " } ").append("}\n");
  }

  /** The inner packet's source address as raw payload behind UDP (8 bytes) and VXLAN-GPE (8 bytes). */
  private static String innerSource(IpFamily f) {
    return f == IpFamily.V4 ? "@th,224,32" : "@th,192,128";
  }

  private static String quoted(String device) {
    // Interface names cannot hold a quote or a backslash (the kernel refuses '/', ':' and whitespace too).
    if (device.indexOf('"') >= 0 || device.indexOf('\\') >= 0) {
      throw new IllegalArgumentException("not an interface name: " + device);
    }
    return "\"" + device + "\"";
  }

  private static String fam(IpFamily f) {
    return f == IpFamily.V4 ? "v4" : "v6";
  }

  private static String ip(IpFamily f) {
    return f == IpFamily.V4 ? "ip" : "ip6";
  }

  private static String type(IpFamily f) {
    return f == IpFamily.V4 ? "ipv4_addr" : "ipv6_addr";
  }
}
