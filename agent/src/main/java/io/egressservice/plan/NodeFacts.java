package io.egressservice.plan;

import io.egressservice.model.PlanConfig;
import io.egressservice.model.SteeringConfig;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * What a planning pass knows of the node and its cluster, read once from the {@link NodeInputs}: the Nodes'
 * addresses and pod CIDRs, this node's interface addresses, the in-cluster prefixes of the configuration (the
 * unusable ones refused, and said so), and who may send to the steering port. Node-wide: every service is planned
 * against the same facts, so a change of any of them plans everything again ({@link IncrementalPlanner}).
 */
final class NodeFacts {
  private final String nodeName;
  /** Every Node's addresses (hosts only). */
  private final Set<IpPrefix> nodeAddresses = new TreeSet<>();
  /** Addresses on this node's interfaces (observed), whether or not a Node object lists them. */
  private final Set<IpPrefix> localAddresses = new TreeSet<>();
  private final List<String> refusedInputs = new ArrayList<>();
  /** --service-cidr and --exclude-cidr, without a prefix that covers a whole family. */
  private final List<IpPrefix> otherInClusterPrefixes = new ArrayList<>();
  private final Map<IpFamily, List<IpPrefix>> podNetworks = new EnumMap<>(IpFamily.class);
  private final List<IpPrefix> localPodCidrs = new ArrayList<>();
  private final Map<String, NodeInfo> nodesByName = new HashMap<>();
  private final Set<IpPrefix> ownNodeAddresses = new HashSet<>();
  /** Every Node's InternalIPs: the only outer sources the steering port accepts. */
  private final Set<IpPrefix> nodeInternalIps = new TreeSet<>();
  private final List<String> refused;
  private final SteeringPeers peers;

  NodeFacts(NodeInputs in) {
    this.nodeName = in.nodeName();
    PlanConfig config = in.config();
    for (IpFamily f : IpFamily.values()) {
      podNetworks.put(f, new ArrayList<>());
    }
    for (NodeInfo node : in.nodes()) {
      nodesByName.putIfAbsent(node.name(), node);
      for (String a : node.addresses()) {
        IpPrefix.tryParse(a).filter(IpPrefix::isHost).ifPresent(nodeAddresses::add);
        if (node.name().equals(in.nodeName())) {
          IpPrefix.tryParse(a).filter(IpPrefix::isHost).ifPresent(ownNodeAddresses::add);
        }
      }
      for (String a : node.internalIps()) {
        IpPrefix.tryParse(a).filter(IpPrefix::isHost).ifPresent(nodeInternalIps::add);
      }
      for (String c : node.podCidrs()) {
        IpPrefix.tryParse(c).filter(p -> usableInClusterPrefix(p, "Node " + node.name() + " pod CIDR")).ifPresent(p -> {
          podNetworks.get(p.family()).add(p);
          if (node.name().equals(in.nodeName())) {
            localPodCidrs.add(p);
          }
        });
      }
    }
    for (IpPrefix p : config.clusterCidrs()) {
      if (usableInClusterPrefix(p, "--cluster-cidr")) {
        podNetworks.get(p.family()).add(p);
      }
    }
    for (IpPrefix p : config.serviceCidrs()) {
      if (usableInClusterPrefix(p, "--service-cidr")) {
        otherInClusterPrefixes.add(p);
      }
    }
    for (IpPrefix p : config.excludeCidrs()) {
      if (usableInClusterPrefix(p, "--exclude-cidr")) {
        otherInClusterPrefixes.add(p);
      }
    }
    for (IpPrefix a : in.localAddresses()) {
      if (a.isHost()) {
        localAddresses.add(a);
      }
    }
    refused = List.copyOf(refusedInputs);
    peers = peersOf(config.steering(), nodeAddresses, nodeInternalIps);
  }

  /**
   * An in-cluster prefix that covers a whole address family (0.0.0.0/0, ::/0) would exempt every
   * destination: every service silently without effect. It is refused, and said so.
   */
  private boolean usableInClusterPrefix(IpPrefix p, String what) {
    if (p.length() > 0) {
      return true;
    }
    refusedInputs.add(what + " " + p.cidrText() + " covers every " + familyName(p.family())
        + " address: ignored (as an in-cluster destination it would exempt all egress from every service)");
    return false;
  }

  /** Who may send to the steering port: every Node's InternalIPs as outer sources. */
  private static SteeringPeers peersOf(SteeringConfig steering, Set<IpPrefix> nodeAddresses,
      Set<IpPrefix> nodeInternalIps) {
    if (!steering.steers()) {
      return SteeringPeers.NONE;
    }
    // An InternalIP is a node address too, even where a Node lists it only as InternalIP.
    Set<IpPrefix> all = new TreeSet<>(nodeAddresses);
    all.addAll(nodeInternalIps);
    return new SteeringPeers(true, List.copyOf(nodeInternalIps), List.copyOf(all));
  }

  String nodeName() {
    return nodeName;
  }

  SteeringPeers steeringPeers() {
    return peers;
  }

  /** The inputs refused while the facts were read (an in-cluster prefix covering a whole family). */
  List<String> refusedInputs() {
    return refused;
  }

  /** Every Node's addresses (hosts only); read-only. */
  Set<IpPrefix> nodeAddresses() {
    return java.util.Collections.unmodifiableSet(nodeAddresses);
  }

  boolean isNodeAddress(IpPrefix a) {
    return nodeAddresses.contains(a);
  }

  /** An address this node's own Node object lists. */
  boolean isOwnNodeAddress(IpPrefix a) {
    return ownNodeAddresses.contains(a);
  }

  /** An address on this node's interfaces (observed), whether or not a Node lists it. */
  boolean isLocalAddress(IpPrefix a) {
    return localAddresses.contains(a);
  }

  /** The pod networks of a family: every Node's pod CIDRs and --cluster-cidr; read-only. */
  List<IpPrefix> podNetworks(IpFamily family) {
    return java.util.Collections.unmodifiableList(podNetworks.get(family));
  }

  Optional<NodeInfo> node(String name) {
    return Optional.ofNullable(nodesByName.get(name));
  }

  /**
   * The Node an endpoint lives on: its nodeName, else the Node whose pod CIDRs hold it (the node that steers it, see
   * {@link #isSteerLocal}); empty when neither tells.
   */
  Optional<NodeInfo> nodeOf(CandidateEndpoint c) {
    if (c.nodeName().isPresent()) {
      return node(c.nodeName().get());
    }
    for (NodeInfo n : nodesByName.values()) {
      for (String raw : n.podCidrs()) {
        if (IpPrefix.tryParse(raw).filter(p -> p.family() == c.address().family() && p.contains(c.address()))
            .isPresent()) {
          return Optional.of(n);
        }
      }
    }
    return Optional.empty();
  }

  /** Every InternalIP of the family of a Node (a steering node sends from one of them). */
  static List<IpPrefix> internalIps(NodeInfo node, IpFamily family) {
    return node.internalIps().stream().map(IpPrefix::tryParse).flatMap(Optional::stream)
        .filter(p -> p.isHost() && p.family() == family).distinct().toList();
  }

  /** On a node that steers: its own endpoints, by nodeName, else by this node's pod CIDRs (never guessed). */
  boolean isSteerLocal(CandidateEndpoint c) {
    if (c.nodeName().isPresent()) {
      return c.nodeName().get().equals(nodeName);
    }
    List<IpPrefix> own = localPodCidrs.stream().filter(p -> p.family() == c.address().family()).toList();
    return !own.isEmpty() && Cidrs.anyContains(own, c.address());
  }

  Optional<IpPrefix> ownInternalIp(IpFamily family) {
    return Optional.ofNullable(nodesByName.get(nodeName)).flatMap(n -> internalIp(n, family));
  }

  boolean isLocal(CandidateEndpoint c) {
    if (c.nodeName().isPresent()) {
      return c.nodeName().get().equals(nodeName);
    }
    // No nodeName: judge by this node's pod CIDRs; when unknown, act (as OVN-Kubernetes does): the
    // address can only originate on the node that hosts the pod, so a rule elsewhere is inert.
    List<IpPrefix> own = localPodCidrs.stream().filter(p -> p.family() == c.address().family()).toList();
    return own.isEmpty() || Cidrs.anyContains(own, c.address());
  }

  List<IpPrefix> inClusterPrefixes(IpFamily family) {
    List<IpPrefix> all = new ArrayList<>(podNetworks.get(family));
    otherInClusterPrefixes.stream().filter(p -> p.family() == family).forEach(all::add);
    return all;
  }

  /**
   * SNAT skips these destinations, and the service tables throw them back: in-cluster prefixes, every
   * Node address and every address of this node's interfaces, exactly (an external host on a node's
   * subnet is not in the cluster). Loopback and IPv6 link-local addresses are left out: they are never
   * routed through a table, and a node has a link-local address per pod veth on many CNIs (churn).
   */
  List<IpPrefix> inClusterSet() {
    List<IpPrefix> out = new ArrayList<>();
    for (IpFamily f : IpFamily.values()) {
      List<IpPrefix> all = new ArrayList<>(inClusterPrefixes(f));
      nodeAddresses.stream().filter(a -> a.family() == f).forEach(all::add);
      localAddresses.stream().filter(a -> a.family() == f && !isLoopback(a) && !LINK_LOCAL_V6.contains(a))
          .forEach(all::add);
      out.addAll(Cidrs.aggregate(all));
    }
    return out;
  }

  private static boolean isLoopback(IpPrefix a) {
    return a.family() == IpFamily.V4 ? LOOPBACK_V4.contains(a) : a.equals(LOOPBACK_V6);
  }

  /** The first InternalIP of the family of a Node: where steered traffic goes. */
  static Optional<IpPrefix> internalIp(NodeInfo node, IpFamily family) {
    for (String raw : node.internalIps()) {
      Optional<IpPrefix> ip = IpPrefix.tryParse(raw).filter(IpPrefix::isHost).filter(p -> p.family() == family);
      if (ip.isPresent()) {
        return ip;
      }
    }
    return Optional.empty();
  }

  static String familyName(IpFamily f) {
    return f == IpFamily.V4 ? "IPv4" : "IPv6";
  }

  private static final IpPrefix LOOPBACK_V4 = IpPrefix.parse("127.0.0.0/8");
  private static final IpPrefix LOOPBACK_V6 = IpPrefix.parse("::1");
  private static final IpPrefix LINK_LOCAL_V6 = IpPrefix.parse("fe80::/10");
}
