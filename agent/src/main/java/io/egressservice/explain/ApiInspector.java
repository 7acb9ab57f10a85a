package io.egressservice.explain;

import io.egressservice.ip.IpPrefix;
import io.egressservice.objects.ClusterObjects;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodIP;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import org.ovn.k8s.v1.EgressService;

/**
 * Reads, never writes, what the API says about an address (see {@link ApiClaims}). The EgressService is read as a
 * generic resource, so one that fails the schema is still shown as it is. Needs what the agent's own account has
 * (deploy/rbac.yaml: list on egressservices, endpointslices, events and nodes, get on services), so it works in the
 * agent's pod; pods are read when the account may, else a pod is what the EndpointSlices say of it.
 */
public final class ApiInspector {
  private static final String SERVICE_NAME_LABEL = "kubernetes.io/service-name";
  /** Spelled out, so reading them needs no discovery request (nor a typed model that refuses a malformed one). */
  private static final io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext EGRESS_SERVICES =
      new io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext.Builder().withGroup("k8s.ovn.org")
          .withVersion("v1").withKind("EgressService").withPlural("egressservices").withNamespaced(true).build();
  private final KubernetesClient client;

  public ApiInspector(KubernetesClient client) {
    this.client = client;
  }

  /** The pod {@code namespace/name}, or an ExplainException naming what is missing. */
  public Pod pod(String namespace, String name) {
    Pod pod;
    try {
      pod = client.pods().inNamespace(namespace).withName(name).get();
    } catch (KubernetesClientException e) {
      if (e.getCode() != 403) {
        throw refused(e);
      }
      // no read of pods (the agent's account): the addresses an EndpointSlice gives the pod by its targetRef
      return fromSlices(namespace, name).orElseThrow(() -> new ExplainException("this account may not read pods, and"
          + " no EndpointSlice in " + namespace + " names pod " + name + ": give its address instead (--pod-ip, which"
          + " the kubectl plugin passes)"));
    }
    if (pod == null) {
      throw new ExplainException("no pod " + namespace + "/" + name + " in the API");
    }
    return pod;
  }

  /** The pod's addresses ({@code status.podIPs}, else {@code status.podIP}). */
  public static List<String> addresses(Pod pod) {
    if (pod.getStatus() == null) {
      return List.of();
    }
    List<String> ips = new ArrayList<>();
    if (pod.getStatus().getPodIPs() != null) {
      pod.getStatus().getPodIPs().stream().map(PodIP::getIp).filter(Objects::nonNull).forEach(ips::add);
    }
    if (ips.isEmpty() && pod.getStatus().getPodIP() != null) {
      ips.add(pod.getStatus().getPodIP());
    }
    return ips;
  }

  public ApiClaims claims(IpPrefix address) {
    String ip = address.addressText();
    // The agent's own account may not read pods (deploy/rbac.yaml gives it none): then the pod is the one an
    // EndpointSlice names for the address (targetRef and nodeName), which the account does read.
    Optional<List<Pod>> pods = readable(() -> client.pods().inAnyNamespace().list().getItems());
    Optional<Pod> listed = pods.orElse(List.of()).stream()
        .filter(p -> p.getSpec() == null || !Boolean.TRUE.equals(p.getSpec().getHostNetwork()))
        .filter(p -> addresses(p).stream().anyMatch(a -> sameAddress(a, address)))
        .findFirst();
    List<EndpointSlice> slices = call(() -> listed.isPresent()
        ? client.discovery().v1().endpointSlices().inNamespace(listed.get().getMetadata().getNamespace()).list().getItems()
        : client.discovery().v1().endpointSlices().inAnyNamespace().list().getItems());
    Optional<Pod> pod = pods.isPresent() ? listed : slices.stream().filter(s -> s.getEndpoints() != null).flatMap(s -> s.getEndpoints().stream()
              .filter(e -> e.getAddresses() != null && e.getAddresses().stream().anyMatch(a -> sameAddress(a, address)))
              .filter(e -> e.getTargetRef() != null && "Pod".equals(e.getTargetRef().getKind()))
              .map(e -> new io.fabric8.kubernetes.api.model.PodBuilder().withNewMetadata()
                  .withName(e.getTargetRef().getName())
                  .withNamespace(Optional.ofNullable(e.getTargetRef().getNamespace()).orElse(s.getMetadata().getNamespace()))
                  .endMetadata().withNewSpec().withNodeName(e.getNodeName()).endSpec().build()))
          .findFirst();
    List<String> services = new ArrayList<>();
    for (EndpointSlice s : slices) {
      String svc = s.getMetadata().getLabels() == null ? null : s.getMetadata().getLabels().get(SERVICE_NAME_LABEL);
      if (svc == null || s.getEndpoints() == null) {
        continue;
      }
      boolean lists = s.getEndpoints().stream().filter(e -> e.getAddresses() != null)
          .anyMatch(e -> e.getAddresses().stream().anyMatch(a -> sameAddress(a, address)));
      String key = s.getMetadata().getNamespace() + "/" + svc;
      if (lists && !services.contains(key)) {
        services.add(key);
      }
    }
    List<ApiClaims.Claim> claims = new ArrayList<>();
    for (String key : services) {
      claims.add(claim(key));
    }
    // an EgressService's claim first, the oldest first: the order in which the agent gives them an endpoint
    claims.sort(Comparator.comparing((ApiClaims.Claim c) -> !c.egressService()));
    Map<String, String> nodes = new HashMap<>();
    for (Node n : call(() -> client.nodes().list().getItems())) {
      if (n.getStatus() != null && n.getStatus().getAddresses() != null) {
        n.getStatus().getAddresses().forEach(a -> nodes.put(normal(a.getAddress()), n.getMetadata().getName()));
      }
    }
    return new ApiClaims(pod.map(p -> p.getMetadata().getNamespace() + "/" + p.getMetadata().getName()),
        pod.map(p -> p.getSpec() == null ? null : p.getSpec().getNodeName()), claims, nodes);
  }

  private ApiClaims.Claim claim(String key) {
    String ns = key.substring(0, key.indexOf('/'));
    String name = key.substring(key.indexOf('/') + 1);
    // listed, not fetched: the agent's account may list EgressServices but not get one
    GenericKubernetesResource es = call(() -> client.genericKubernetesResources(EGRESS_SERVICES)
        .inNamespace(ns).list().getItems()).stream().filter(r -> name.equals(r.getMetadata().getName()))
        .findFirst().orElse(null);
    Service svc = call(() -> client.services().inNamespace(ns).withName(name).get());
    List<String> lbIps = new ArrayList<>();
    if (svc != null && svc.getStatus() != null && svc.getStatus().getLoadBalancer() != null
        && svc.getStatus().getLoadBalancer().getIngress() != null) {
      svc.getStatus().getLoadBalancer().getIngress().stream().map(i -> i.getIp()).filter(Objects::nonNull)
          .forEach(lbIps::add);
    }
    if (es == null) {
      return new ApiClaims.Claim(key, false, "", Optional.empty(), Optional.empty(), lbIps, List.of());
    }
    Map<String, Object> props = es.getAdditionalProperties();
    String mode = text(props, "spec", "sourceIPBy").orElse("LoadBalancerIP");
    List<ApiClaims.Reason> reasons = new ArrayList<>();
    List<Event> events = call(() -> client.v1().events().inNamespace(ns).list().getItems());
    events.stream()
        .filter(e -> e.getInvolvedObject() != null && "EgressService".equals(e.getInvolvedObject().getKind())
            && name.equals(e.getInvolvedObject().getName()))
        .filter(e -> !serviceNotFoundBefore(e, svc))
        .sorted(WRITE_ORDER)
        .forEach(e -> reasons.add(reasonOf(e)));
    return new ApiClaims.Claim(key, true, mode, text(props, "spec", "network").filter(s -> !s.isEmpty()),
        text(props, "status", "host").filter(s -> !s.isEmpty()), lbIps, reasons);
  }

  /**
   * The last change of each EgressService in {@code objects} and why, by {@code namespace/name}: its newest Event,
   * from any reporter (the agents write one when what they do for it changes, never per resync; the allocator when
   * it chooses a host or cannot). Ordered as {@link #claims} orders them (the order they were written, see
   * {@link #WRITE_ORDER}), so status and explain agree. The API keeps an Event for an hour after it was last
   * seen: a service without one has had no change since. A namespace whose Events this account may not read gives
   * none: status shows the kernel's state without them rather than fail.
   */
  public Map<String, ApiClaims.Reason> lastChanges(ClusterObjects objects) {
    Map<String, Service> services = new HashMap<>();
    objects.services().forEach(s -> services.put(s.getMetadata().getNamespace() + "/" + s.getMetadata().getName(), s));
    java.util.Set<String> wanted = new java.util.HashSet<>();
    java.util.SortedSet<String> namespaces = new java.util.TreeSet<>();
    for (EgressService es : objects.egressServices()) {
      wanted.add(es.getMetadata().getNamespace() + "/" + es.getMetadata().getName());
      namespaces.add(es.getMetadata().getNamespace());
    }
    Map<String, ApiClaims.Reason> out = new java.util.TreeMap<>();
    for (String ns : namespaces) {
      List<Event> events;
      try {
        events = client.v1().events().inNamespace(ns).list().getItems();
      } catch (KubernetesClientException e) {
        continue;
      }
      events.stream()
          .filter(e -> e.getInvolvedObject() != null && "EgressService".equals(e.getInvolvedObject().getKind())
              && wanted.contains(ns + "/" + e.getInvolvedObject().getName()))
          .filter(e -> !serviceNotFoundBefore(e, services.get(ns + "/" + e.getInvolvedObject().getName())))
          .sorted(WRITE_ORDER)
          .forEach(e -> out.put(ns + "/" + e.getInvolvedObject().getName(), reasonOf(e))); // the newest stays
    }
    return out;
  }

  /** What an Event says, and who wrote it (the node or the allocator). */
  private static ApiClaims.Reason reasonOf(Event e) {
    return new ApiClaims.Reason(Optional.ofNullable(e.getType()).orElse("Normal"),
        Optional.ofNullable(e.getReason()).orElse(""), Optional.ofNullable(e.getMessage()).orElse(""),
        Optional.ofNullable(e.getReportingInstance())
            .or(() -> Optional.ofNullable(e.getSource()).map(s -> s.getHost() != null ? s.getHost() : s.getComponent()))
            .orElse(""),
        lastSeen(e));
  }

  /**
   * The objects {@code status} and {@code plan} read, from the API: every EgressService, the Services and
   * EndpointSlices of the same names (only those: a cluster's other services are no input of the plan) and the
   * Nodes, so a rule the kernel cannot attribute (a ClusterIP, an endpoint without SNAT entry) gets its service.
   */
  public ClusterObjects objects() {
    List<EgressService> egress = call(() -> client.resources(EgressService.class).inAnyNamespace().list().getItems());
    List<Service> services = new ArrayList<>();
    List<EndpointSlice> slices = new ArrayList<>();
    for (EgressService es : egress) {
      String ns = es.getMetadata().getNamespace();
      String name = es.getMetadata().getName();
      Optional.ofNullable(call(() -> client.services().inNamespace(ns).withName(name).get())).ifPresent(services::add);
      slices.addAll(call(() -> client.discovery().v1().endpointSlices().inNamespace(ns)
          .withLabel(SERVICE_NAME_LABEL, name).list().getItems()));
    }
    return new ClusterObjects(egress, services, slices, call(() -> client.nodes().list().getItems()));
  }

  /**
   * "Service not found" while the Service is there is of a time before it (applied with its EgressService, and
   * seen a moment later; or deleted and created again): not a reason any more, nor worth showing.
   */
  private static boolean serviceNotFoundBefore(Event e, Service svc) {
    return svc != null && "ServiceNotFound".equals(e.getReason());
  }

  /**
   * Events in the order they were written: by when last seen (second precision: several a second tie), then by
   * resourceVersion (the API server's write order; opaque, compared as a number when it is one), then by name. The
   * order the API lists them in is no tie-break: a real server lists by name, and two listings of the same Events
   * must agree (status and explain, or status run twice).
   */
  private static final Comparator<Event> WRITE_ORDER = Comparator.comparing(ApiInspector::lastSeen)
      .thenComparing(ApiInspector::resourceVersion, ApiInspector::compareVersions)
      .thenComparing(e -> Optional.ofNullable(e.getMetadata().getName()).orElse(""));

  private static String resourceVersion(Event e) {
    return Optional.ofNullable(e.getMetadata().getResourceVersion()).orElse("");
  }

  private static int compareVersions(String a, String b) {
    try {
      return Long.compare(Long.parseLong(a), Long.parseLong(b));
    } catch (NumberFormatException e) {
      return a.compareTo(b);
    }
  }

  private static String lastSeen(Event e) {
    return Optional.ofNullable(e.getLastTimestamp()).or(() -> Optional.ofNullable(e.getEventTime()).map(t -> t.getTime()))
        .or(() -> Optional.ofNullable(e.getMetadata().getCreationTimestamp())).orElse("");
  }

  @SuppressWarnings("unchecked")
  private static Optional<String> text(Map<String, Object> props, String object, String field) {
    Object o = props.get(object);
    if (!(o instanceof Map<?, ?> m)) {
      return Optional.empty();
    }
    Object v = ((Map<String, Object>) m).get(field);
    return v == null ? Optional.empty() : Optional.of(String.valueOf(v));
  }

  private static boolean sameAddress(String text, IpPrefix address) {
    return normal(text).equals(address.addressText());
  }

  private static String normal(String text) {
    try {
      return IpPrefix.parseHost(text).addressText();
    } catch (RuntimeException e) {
      return text;
    }
  }

  /** Pod {@code namespace/name} as EndpointSlices name it: its addresses and node, nothing else. */
  private Optional<Pod> fromSlices(String namespace, String name) {
    List<String> ips = new ArrayList<>();
    String node = null;
    for (EndpointSlice s : call(() -> client.discovery().v1().endpointSlices().inNamespace(namespace).list().getItems())) {
      for (var e : s.getEndpoints() == null ? List.<io.fabric8.kubernetes.api.model.discovery.v1.Endpoint>of()
          : s.getEndpoints()) {
        if (e.getTargetRef() != null && "Pod".equals(e.getTargetRef().getKind())
            && name.equals(e.getTargetRef().getName()) && e.getAddresses() != null) {
          e.getAddresses().stream().filter(a -> !ips.contains(a)).forEach(ips::add);
          node = e.getNodeName();
        }
      }
    }
    if (ips.isEmpty()) {
      return Optional.empty();
    }
    var b = new io.fabric8.kubernetes.api.model.PodBuilder().withNewMetadata().withName(name).withNamespace(namespace)
        .endMetadata().withNewSpec().withNodeName(node).endSpec().withNewStatus().withPodIP(ips.get(0)).endStatus();
    ips.forEach(ip -> b.editStatus().addNewPodIP().withIp(ip).endPodIP().endStatus());
    return Optional.of(b.build());
  }

  /** A read (of something that is there) the account may be refused (403): empty then. */
  private static <T> Optional<T> readable(java.util.function.Supplier<T> read) {
    try {
      return Optional.of(read.get());
    } catch (KubernetesClientException e) {
      if (e.getCode() == 403) {
        return Optional.empty();
      }
      throw refused(e);
    }
  }

  private static <T> T call(java.util.function.Supplier<T> read) {
    try {
      return read.get();
    } catch (KubernetesClientException e) {
      throw refused(e);
    }
  }

  private static ExplainException refused(KubernetesClientException e) {
    return new ExplainException("the API server refused a read (" + e.getCode() + "): " + e.getMessage()
        + " (the account needs list on endpointslices, services, egressservices, events and nodes; get or list on"
        + " pods helps)");
  }
}
