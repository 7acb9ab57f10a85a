package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import io.egressservice.ip.IpPrefix;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * Which networks (and LoadBalancer IPs) each namespace may use, from the EgressServicePolicy named
 * {@value #NAME} ({@code --egress-service-policy}). Off: everything is allowed, as OVN-Kubernetes does. Enforced:
 * an EgressService is allowed only if one grant that selects its namespace allows all of it, its network and, with
 * {@code sourceIPBy: LoadBalancerIP}, every LoadBalancer ingress IP of its Service (any of them may be the source);
 * a missing or unreadable policy grants nothing (fail closed). Pure; the agents and the allocator ask the same
 * {@link #refusal}, so a service the allocator refuses a host is one no node configures.
 *
 * @param grants the policy's grants; empty when there is no policy object
 * @param problem why the policy object could not be read, when it could not: it then grants nothing
 */
public record GrantPolicy(boolean enforced, Optional<List<Grant>> grants, Optional<String> problem) {
  /** The one policy object read; others are ignored. */
  public static final String NAME = "cluster";

  public GrantPolicy {
    grants = grants.map(List::copyOf);
  }

  /** Not enforced: every network allowed (the default, OVN-Kubernetes-compatible). */
  public static GrantPolicy off() {
    return new GrantPolicy(false, Optional.empty(), Optional.empty());
  }

  /** A policy object with these grants, not yet enforced ({@link #enforced(boolean)}). */
  public static GrantPolicy of(List<Grant> grants) {
    return new GrantPolicy(false, Optional.of(grants), Optional.empty());
  }

  /** A policy object that could not be read: it grants nothing. */
  public static GrantPolicy unreadable(String problem) {
    return new GrantPolicy(false, Optional.empty(), Optional.of(problem));
  }

  /** The same grants, enforced or not. */
  public GrantPolicy enforced(boolean on) {
    return new GrantPolicy(on, grants, problem);
  }

  /**
   * Why the EgressService {@code service} (in namespace {@code namespace}, naming {@code network}) may not be
   * configured, or empty when it may.
   *
   * @param lbIps the LoadBalancer ingress IPs of its Service (read only with {@code sourceIPBy: LoadBalancerIP})
   */
  public Optional<String> refusal(ObjectRef service, NamespaceInfo namespace, String network, SourceIpBy sourceIpBy,
      List<IpPrefix> lbIps) {
    if (!enforced) {
      return Optional.empty();
    }
    String ns = TenantText.quoted(service.namespace());
    if (problem.isPresent()) {
      return Optional.of(REFUSED + "the EgressServicePolicy " + TenantText.quoted(NAME) + " cannot be read ("
          + problem.get() + "), so it grants nothing; a cluster admin fixes it");
    }
    if (grants.isEmpty()) {
      return Optional.of(REFUSED + "the policy is enforced (--egress-service-policy=enforce) and there is no "
          + "EgressServicePolicy " + TenantText.quoted(NAME) + ", so nothing is granted; a cluster admin creates it with"
          + " a grant whose namespaceSelector matches namespace " + ns + ", allowing " + describe(network));
    }
    List<Grant> selecting = grants.get().stream().filter(g -> g.namespaceSelector().matches(namespace.labels()))
        .toList();
    if (selecting.isEmpty()) {
      return Optional.of(REFUSED + "no grant of the EgressServicePolicy " + TenantText.quoted(NAME)
          + " selects namespace " + ns + ", so it may use no EgressService; a cluster admin adds a grant whose"
          + " namespaceSelector matches the namespace's labels, allowing " + describe(network));
    }
    List<Grant> networkAllowed = selecting.stream().filter(g -> g.allowsNetwork(network)).toList();
    if (networkAllowed.isEmpty()) {
      TreeSet<String> allowed = new TreeSet<>();
      selecting.forEach(g -> allowed.addAll(g.networks()));
      return Optional.of(REFUSED + "no grant of the EgressServicePolicy " + TenantText.quoted(NAME)
          + " for namespace " + ns + " allows network " + TenantText.quoted(network) + " (the " + selecting.size()
          + " grant(s) that select it allow " + (allowed.isEmpty() ? "no network" : "only "
              + allowed.stream().map(TenantText::quoted).collect(Collectors.joining(", ")))
          + "); a cluster admin grants it by listing " + TenantText.quoted(network)
          + " in the networks of a grant that selects the namespace");
    }
    if (sourceIpBy != SourceIpBy.LOAD_BALANCER_IP) {
      return Optional.empty();
    }
    for (Grant g : networkAllowed) {
      if (g.allowsLoadBalancerIps(lbIps)) {
        return Optional.empty();
      }
    }
    List<IpPrefix> outside = new ArrayList<>();
    for (IpPrefix ip : lbIps) {
      if (networkAllowed.stream().noneMatch(g -> g.allowsLoadBalancerIps(List.of(ip)))) {
        outside.add(ip);
      }
    }
    String which = (outside.isEmpty() ? lbIps : outside).stream().map(IpPrefix::toString)
        .collect(Collectors.joining(", "));
    return Optional.of(REFUSED + "no grant of the EgressServicePolicy " + TenantText.quoted(NAME) + " for namespace "
        + ns + " that allows " + describe(network) + " holds all of its LoadBalancer IPs (" + which
        + ") in its loadBalancerIPRanges; a cluster admin grants them by adding a range that holds them to such a"
        + " grant");
  }

  /**
   * The LoadBalancer IPs a grant must hold: every ingress IP of the Service (any of them may become the source, if
   * the first of its family is refused), so the agents and the allocator judge the same addresses.
   */
  public static List<IpPrefix> loadBalancerIps(ServiceInfo service) {
    List<IpPrefix> out = new ArrayList<>(service.ingress().size());
    for (ServiceInfo.Ingress ing : service.ingress()) {
      IpPrefix.tryParse(ing.ip()).filter(IpPrefix::isHost).ifPresent(out::add);
    }
    return out;
  }

  /** How every grant refusal starts (the reason of the plan, the allocator's Event and status). */
  public static final String REFUSED = "not granted: ";

  private static String describe(String network) {
    return network.isEmpty() ? "no network (an EgressService without spec.network)"
        : "network " + TenantText.quoted(network);
  }
}
