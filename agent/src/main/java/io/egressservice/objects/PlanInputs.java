package io.egressservice.objects;

import io.egressservice.ip.IpPrefix;
import io.egressservice.plan.EgressServiceInfo;
import io.egressservice.plan.EndpointSliceInfo;
import io.egressservice.plan.NetworkResolution;
import io.egressservice.plan.NodeInfo;
import io.egressservice.plan.NodeInputs;
import io.egressservice.model.ObjectRef;
import io.egressservice.model.PlanConfig;
import io.egressservice.plan.ServiceInfo;
import io.egressservice.plan.SourceIpBy;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.LoadBalancerIngress;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeAddress;
import io.fabric8.kubernetes.api.model.ObjectReference;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServicePort;
import io.fabric8.kubernetes.api.model.discovery.v1.Endpoint;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceSpec;

/** fabric8 models (with their nulls) to the plan's null-free inputs. */
public final class PlanInputs {
  public static final String SERVICE_NAME_LABEL = "kubernetes.io/service-name";

  private PlanInputs() {}

  public static NodeInputs of(
      String nodeName,
      ClusterObjects objects,
      List<IpPrefix> localAddresses,
      NetworkResolution networks,
      PlanConfig config) {
    return of(nodeName, objects, localAddresses, networks, config, Map.of(), Memo.none());
  }

  /**
   * With the marks the kernel already uses per table (mark mode), so they stay stable, reusing what
   * {@code memo} remembers of objects it has seen before.
   */
  public static NodeInputs of(
      String nodeName,
      ClusterObjects objects,
      List<IpPrefix> localAddresses,
      NetworkResolution networks,
      PlanConfig config,
      Map<Long, Long> existingMarks,
      Memo memo) {
    return of(nodeName, objects, localAddresses, networks, config, existingMarks, Map.of(), memo);
  }

  /** The same, with the steering tables the kernel already has (table id to the host addresses they lead to). */
  public static NodeInputs of(
      String nodeName,
      ClusterObjects objects,
      List<IpPrefix> localAddresses,
      NetworkResolution networks,
      PlanConfig config,
      Map<Long, Long> existingMarks,
      Map<Long, java.util.Set<IpPrefix>> existingSteerTables,
      Memo memo) {
    return memo.convert(objects, (es, svc, slices, nodes) -> new NodeInputs(
        nodeName, es, svc, slices, nodes, localAddresses, networks, config, existingMarks, existingSteerTables)
        .withGrants(objects.grants().policy(), objects.grants().namespaces()));
  }

  /**
   * Each object's plan input, remembered by object identity from one conversion to the next. An informer
   * cache replaces an object when it changes and never mutates it, so between two reconciles only the
   * changed objects are converted again (the rest, parsed timestamps included, is reused). Only what the
   * last conversion saw is kept. For objects that may be mutated in place, use {@link #none()}.
   * One memo serves one thread at a time.
   */
  public static final class Memo {
    private final boolean remember;
    private IdentityHashMap<Object, Object> previous = new IdentityHashMap<>();

    private Memo(boolean remember) {
      this.remember = remember;
    }

    /** A memo for objects that are replaced, never mutated, when they change (informer caches). */
    public static Memo forImmutableObjects() {
      return new Memo(true);
    }

    /** Converts every object every time. */
    public static Memo none() {
      return new Memo(false);
    }

    interface Assembler {
      NodeInputs assemble(List<EgressServiceInfo> egressServices, List<ServiceInfo> services,
          List<EndpointSliceInfo> slices, List<NodeInfo> nodes);
    }

    synchronized NodeInputs convert(ClusterObjects objects, Assembler assembler) {
      IdentityHashMap<Object, Object> seen = new IdentityHashMap<>(remember ? previous.size() * 2 : 0);
      NodeInputs out = assembler.assemble(
          convert(objects.egressServices(), PlanInputs::egressService, seen),
          convert(objects.services(), PlanInputs::service, seen),
          convert(objects.endpointSlices(), PlanInputs::slice, seen),
          convert(objects.nodes(), PlanInputs::node, seen));
      if (remember) {
        previous = seen;
      }
      return out;
    }

    private <T, R> List<R> convert(List<T> objects, Function<T, R> projection, IdentityHashMap<Object, Object> seen) {
      List<R> out = new ArrayList<>(objects.size());
      for (T o : objects) {
        @SuppressWarnings("unchecked")
        R known = (R) previous.get(o); // always empty without memory
        R info = known != null ? known : projection.apply(o);
        if (remember) {
          seen.put(o, info);
        }
        out.add(info);
      }
      return out;
    }
  }

  public static ObjectRef ref(HasMetadata o) {
    return new ObjectRef(o.getMetadata().getNamespace(), o.getMetadata().getName());
  }

  public static EgressServiceInfo egressService(EgressService es) {
    if (es instanceof MalformedEgressService malformed) {
      String host = es.getStatus() == null ? "" : es.getStatus().getHost();
      return new EgressServiceInfo(ref(es), created(es), SourceIpBy.LOAD_BALANCER_IP, "", host,
          Optional.of(malformed.problem()));
    }
    EgressServiceSpec spec = es.getSpec() == null ? new EgressServiceSpec() : es.getSpec();
    SourceIpBy mode = spec.getSourceIPBy() == EgressServiceSpec.SourceIPBy.NETWORK
        ? SourceIpBy.NETWORK : SourceIpBy.LOAD_BALANCER_IP;
    String host = es.getStatus() == null ? "" : es.getStatus().getHost();
    return new EgressServiceInfo(ref(es), created(es), mode, spec.getNetwork(), host, Optional.empty(),
        alsoReceive(es));
  }

  /** The node of the {@link EgressServiceInfo#ALSO_RECEIVE_ANNOTATION} annotation, "" when absent. */
  public static String alsoReceive(HasMetadata o) {
    Map<String, String> annotations = o.getMetadata().getAnnotations();
    String node = annotations == null ? null : annotations.get(EgressServiceInfo.ALSO_RECEIVE_ANNOTATION);
    return node == null ? "" : node.trim();
  }

  private static Optional<Instant> created(HasMetadata o) {
    String ts = o.getMetadata().getCreationTimestamp();
    if (ts == null || ts.isEmpty()) {
      return Optional.empty();
    }
    try {
      return Optional.of(Instant.parse(ts));
    } catch (DateTimeParseException e) {
      return Optional.empty();
    }
  }

  public static ServiceInfo service(Service s) {
    String type = s.getSpec() == null ? "" : s.getSpec().getType();
    List<String> clusterIps = new ArrayList<>();
    if (s.getSpec() != null) {
      if (s.getSpec().getClusterIPs() != null && !s.getSpec().getClusterIPs().isEmpty()) {
        s.getSpec().getClusterIPs().stream().filter(Objects::nonNull).forEach(clusterIps::add);
      } else if (s.getSpec().getClusterIP() != null) {
        clusterIps.add(s.getSpec().getClusterIP());
      }
    }
    List<ServiceInfo.Ingress> ingress = new ArrayList<>();
    if (s.getStatus() != null && s.getStatus().getLoadBalancer() != null
        && s.getStatus().getLoadBalancer().getIngress() != null) {
      for (LoadBalancerIngress i : s.getStatus().getLoadBalancer().getIngress()) {
        if (i == null) {
          continue;
        }
        ingress.add(new ServiceInfo.Ingress(i.getIp(), i.getHostname()));
      }
    }
    String etp = s.getSpec() == null ? "" : s.getSpec().getExternalTrafficPolicy();
    List<Integer> nodePorts = new ArrayList<>();
    if (s.getSpec() != null && s.getSpec().getPorts() != null) {
      for (ServicePort p : s.getSpec().getPorts()) {
        if (p != null && p.getNodePort() != null && p.getNodePort() != 0) {
          nodePorts.add(p.getNodePort());
        }
      }
    }
    boolean selector = s.getSpec() != null && s.getSpec().getSelector() != null && !s.getSpec().getSelector().isEmpty();
    return new ServiceInfo(ref(s), type, clusterIps, ingress, etp, nodePorts, selector, created(s));
  }

  /** The name of the Service a slice belongs to (its service-name label), or "". */
  public static String serviceName(EndpointSlice s) {
    Map<String, String> labels = s.getMetadata().getLabels();
    return labels == null ? "" : labels.getOrDefault(SERVICE_NAME_LABEL, "");
  }

  /** Who wrote a slice (its {@code endpointslice.kubernetes.io/managed-by} label), or "". */
  public static String managedBy(EndpointSlice s) {
    Map<String, String> labels = s.getMetadata().getLabels();
    return labels == null ? "" : labels.getOrDefault(EndpointSliceInfo.MANAGED_BY_LABEL, "");
  }

  /**
   * The endpoint's targetRef when it names a Pod of another namespace than the slice's: the only targetRef
   * the plan refuses ({@link io.egressservice.model.EndpointTrust}), so the usual ones (a Pod of the Service's
   * own namespace, on every endpoint of the cluster) are neither converted nor kept in the caches.
   */
  public static Optional<ObjectReference> foreignPod(EndpointSlice s, Endpoint e) {
    ObjectReference t = e.getTargetRef();
    if (t == null || !"Pod".equals(t.getKind()) || t.getNamespace() == null || t.getNamespace().isEmpty()
        || t.getNamespace().equals(s.getMetadata().getNamespace())) {
      return Optional.empty();
    }
    return Optional.of(t);
  }

  public static EndpointSliceInfo slice(EndpointSlice s) {
    String svc = serviceName(s);
    List<EndpointSliceInfo.Endpoint> endpoints = new ArrayList<>();
    if (s.getEndpoints() != null) {
      for (Endpoint e : s.getEndpoints()) {
        if (e == null) {
          continue;
        }
        endpoints.add(new EndpointSliceInfo.Endpoint(
            e.getAddresses() == null ? List.of() : e.getAddresses().stream().filter(Objects::nonNull).toList(),
            Optional.ofNullable(e.getNodeName()).filter(n -> !n.isEmpty()),
            foreignPod(s, e).map(t -> new EndpointSliceInfo.TargetRef(t.getKind(), t.getNamespace()))));
      }
    }
    return new EndpointSliceInfo(ref(s), svc, s.getAddressType(), managedBy(s), endpoints);
  }

  public static NodeInfo node(Node n) {
    List<String> addresses = new ArrayList<>();
    List<String> internal = new ArrayList<>();
    if (n.getStatus() != null && n.getStatus().getAddresses() != null) {
      for (NodeAddress a : n.getStatus().getAddresses()) {
        if (a != null && a.getAddress() != null
            && ("InternalIP".equals(a.getType()) || "ExternalIP".equals(a.getType()))) {
          addresses.add(a.getAddress());
          if ("InternalIP".equals(a.getType())) {
            internal.add(a.getAddress());
          }
        }
      }
    }
    List<String> podCidrs = new ArrayList<>();
    if (n.getSpec() != null) {
      if (n.getSpec().getPodCIDRs() != null && !n.getSpec().getPodCIDRs().isEmpty()) {
        n.getSpec().getPodCIDRs().stream().filter(Objects::nonNull).forEach(podCidrs::add);
      } else if (n.getSpec().getPodCIDR() != null) {
        podCidrs.add(n.getSpec().getPodCIDR());
      }
    }
    return new NodeInfo(n.getMetadata().getName(), addresses, podCidrs, internal);
  }
}
