package io.egressservice.plan;

import io.egressservice.ip.IpPrefix;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Which LoadBalancer ingress IPs may be an egress source. An LB IP becomes the source of the service's
 * endpoint traffic; an address that cannot be a public source (unspecified, loopback, multicast, broadcast,
 * link-local), one of the cluster's own (a Node address, an in-cluster prefix), or one that a Service of
 * another namespace also holds, would blackhole that traffic or make it pass for someone else's.
 */
final class LoadBalancerIps {
  private record Special(IpPrefix prefix, String what) {}

  private static final List<Special> SPECIAL = List.of(
      new Special(IpPrefix.parse("0.0.0.0/8"), "an unspecified ('this network') address"),
      new Special(IpPrefix.parse("127.0.0.0/8"), "a loopback address"),
      new Special(IpPrefix.parse("169.254.0.0/16"), "a link-local address"),
      new Special(IpPrefix.parse("224.0.0.0/4"), "a multicast address"),
      new Special(IpPrefix.parse("255.255.255.255/32"), "the broadcast address"),
      new Special(IpPrefix.parse("240.0.0.0/4"), "a reserved (class E) address"),
      new Special(IpPrefix.parse("::/128"), "the unspecified address"),
      new Special(IpPrefix.parse("::1/128"), "the loopback address"),
      new Special(IpPrefix.parse("::ffff:0:0/96"), "an IPv4-mapped address"),
      new Special(IpPrefix.parse("fe80::/10"), "a link-local address"),
      new Special(IpPrefix.parse("ff00::/8"), "a multicast address"));

  /** Per LB IP, every LoadBalancer Service that holds it; the oldest keeps it when they are of several namespaces. */
  private final Map<IpPrefix, List<ServiceInfo>> holders = new HashMap<>();

  LoadBalancerIps(Collection<ServiceInfo> services) {
    services.forEach(this::add);
  }

  /** The host addresses {@code s} holds as a LoadBalancer Service (none for another type). */
  static List<IpPrefix> heldBy(ServiceInfo s) {
    if (!ServiceInfo.LOAD_BALANCER.equals(s.type())) {
      return List.of();
    }
    List<IpPrefix> out = new ArrayList<>(1);
    for (ServiceInfo.Ingress ing : s.ingress()) {
      IpPrefix.tryParse(ing.ip()).filter(IpPrefix::isHost).ifPresent(out::add);
    }
    return out;
  }

  void add(ServiceInfo s) {
    for (IpPrefix ip : heldBy(s)) {
      List<ServiceInfo> list = holders.computeIfAbsent(ip, k -> new ArrayList<>(1));
      if (!list.contains(s)) {
        list.add(s);
      }
    }
  }

  void remove(ServiceInfo s) {
    for (IpPrefix ip : heldBy(s)) {
      List<ServiceInfo> list = holders.get(ip);
      if (list != null) {
        list.remove(s);
        if (list.isEmpty()) {
          holders.remove(ip);
        }
      }
    }
  }

  /** The Services that hold {@code ip}. */
  List<ServiceInfo> holdersOf(IpPrefix ip) {
    return holders.getOrDefault(ip, List.of());
  }

  private ServiceInfo keeper(IpPrefix ip) {
    ServiceInfo keeper = null;
    for (ServiceInfo s : holders.getOrDefault(ip, List.of())) {
      if (keeper == null || older(s, keeper)) {
        keeper = s;
      }
    }
    return keeper;
  }

  private static boolean older(ServiceInfo a, ServiceInfo b) {
    int c = a.created().orElse(Instant.MAX).compareTo(b.created().orElse(Instant.MAX));
    return c != 0 ? c < 0 : a.ref().compareTo(b.ref()) <= 0;
  }

  /** What kind of special address {@code ip} is, or empty for an ordinary unicast address. */
  static Optional<String> specialAddress(IpPrefix ip) {
    for (Special s : SPECIAL) {
      if (s.prefix().family() == ip.family() && s.prefix().contains(ip)) {
        return Optional.of(s.what());
      }
    }
    return Optional.empty();
  }

  /**
   * Why {@code ip} cannot be {@code service}'s egress source, or empty.
   *
   * @param nodeAddresses every Node address of the cluster
   * @param inCluster the in-cluster prefixes of the ip's family (pod and service networks, --exclude-cidr)
   */
  Optional<String> problem(ServiceInfo service, IpPrefix ip, Collection<IpPrefix> nodeAddresses,
      Collection<IpPrefix> inCluster) {
    Optional<String> special = specialAddress(ip);
    if (special.isPresent()) {
      return Optional.of("LoadBalancer ingress IP " + ip + " is " + special.get() + ": not an egress source");
    }
    if (nodeAddresses.contains(ip)) {
      return Optional.of("LoadBalancer ingress IP " + ip + " is a Node address: not an egress source");
    }
    for (IpPrefix p : inCluster) {
      if (p.contains(ip)) {
        return Optional.of("LoadBalancer ingress IP " + ip + " is inside the in-cluster network " + p
            + ": not an egress source");
      }
    }
    ServiceInfo holder = keeper(ip);
    if (holder != null && !holder.ref().namespace().equals(service.ref().namespace())) {
      return Optional.of("LoadBalancer ingress IP " + ip + " is also held by Service " + holder.ref()
          + " of another namespace, which is older and keeps it as its egress source");
    }
    return Optional.empty();
  }
}
