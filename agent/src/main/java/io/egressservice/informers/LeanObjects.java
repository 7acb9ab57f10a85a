package io.egressservice.informers;

import io.egressservice.objects.MalformedEgressService;
import io.egressservice.objects.PlanInputs;
import io.egressservice.plan.EndpointSliceInfo;
import io.fabric8.kubernetes.api.model.LoadBalancerIngress;
import io.fabric8.kubernetes.api.model.LoadBalancerStatus;
import io.fabric8.kubernetes.api.model.ManagedFieldsEntry;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeAddress;
import io.fabric8.kubernetes.api.model.NodeCondition;
import io.fabric8.kubernetes.api.model.NodeSpec;
import io.fabric8.kubernetes.api.model.NodeStatus;
import io.fabric8.kubernetes.api.model.ObjectMeta;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import io.fabric8.kubernetes.api.model.ObjectReference;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServicePort;
import io.fabric8.kubernetes.api.model.ServiceSpec;
import io.fabric8.kubernetes.api.model.ServiceStatus;
import io.fabric8.kubernetes.api.model.discovery.v1.Endpoint;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;
import org.ovn.k8s.v1.EgressService;

/**
 * The copies of cluster objects that the informer caches keep: only the fields that some part of the
 * agent reads. The caches hold every Service and every Service-owned EndpointSlice of the cluster, not
 * only those with an EgressService, and every Node with its {@code status.images} (often tens of KB a
 * node), so what a cache keeps per object decides most of the agent's heap.
 *
 * <p>Who reads cached objects, and so what each copy keeps:
 * <ul>
 *   <li>{@link PlanInputs} (the node agent's plan, its event filter, and the allocator's inputs):
 *       Service {@code spec.type}, {@code spec.clusterIP(s)}, {@code spec.externalTrafficPolicy},
 *       {@code spec.ports[].nodePort}, {@code spec.selector} (whether there is one: endpoint trust),
 *       {@code status.loadBalancer.ingress[].ip/hostname}, {@code creationTimestamp};
 *       EndpointSlice {@code kubernetes.io/service-name} and {@code endpointslice.kubernetes.io/managed-by} labels,
 *       {@code addressType}, {@code endpoints[].addresses/nodeName}, {@code endpoints[].targetRef.kind/namespace}
 *       when it is a Pod of another namespace (not the conditions: the plan deliberately ignores readiness);
 *       Node {@code spec.podCIDR(s)}, {@code status.addresses[].type/address}.</li>
 *   <li>{@code AllocatorInputs}: Node {@code metadata.labels} (nodeSelector), {@code deletionTimestamp},
 *       {@code spec.unschedulable}, {@code status.conditions[].type/status} (Ready).</li>
 *   <li>Everyone: name and namespace (cache keys, {@code ObjectRef}s); {@code resourceVersion}, which fabric8
 *       compares to skip the objects a relist finds unchanged; uid, creation and deletion timestamps are kept because
 *       they identify an object's incarnation and cost one string each.</li>
 *   <li>The allocator writes {@code status.host} through the status subresource from a clone of the cached
 *       EgressService and refers to it in Events (uid, resourceVersion, apiVersion, kind). EgressServices are
 *       few and small, so they keep everything but {@code managedFields} and annotations: a copy that drops
 *       spec fields would be one refactoring away from writing them back.</li>
 * </ul>
 * Service labels are kept although nothing reads them today: they are few per Service and the obvious
 * thing a future Service reader (service-proxy-name, say) would look for. EndpointSlice labels are not: the
 * EndpointSlice controller copies every label of the Service onto each slice, and only the service-name
 * and managed-by labels are read.
 *
 * <p>Strings that repeat across thousands of objects (namespaces, node names in endpoints, label keys and
 * values, type and status words) are interned: Jackson gives every object its own copies. Addresses, names,
 * uids and resource versions are unique and are not.
 *
 * <p>The copies are built field by field, not with fabric8's builders: a builder copies every list into an
 * ArrayList and every map into a LinkedHashMap, and a model's constructor gives each collection field an
 * empty one of its own, plus an empty {@code additionalProperties} map per object. Here every collection is
 * an immutable copy or the shared empty one, which also means no reader can change what the cache holds. A
 * field that a later fabric8 adds keeps its constructor's default: a few bytes more, nothing wrong.
 *
 * <p>Heap per cached object, averaged over the test fixtures (Services, slices of 4 endpoints, nodes with
 * 22-36 images), measured once: 4.0, 7.4 and 22.5 KB with only managedFields and
 * annotations dropped; 1.9, 2.1 and 3.5 KB as lean copies made with builders; 1.4, 1.6 and 3.3 KB field by
 * field without interning; 1.0, 1.1 and 1.8 KB as here.
 *
 * <p>{@code LeanObjectsTest} checks that the plan's and the allocator's inputs are the same from a lean copy
 * as from a full object with every field populated: a new reader of a field dropped here fails it.
 */
public final class LeanObjects {
  private static final Map<String, Object> NO_PROPERTIES = Map.of();

  private LeanObjects() {}

  /**
   * All of the EgressService but {@code metadata.managedFields} and annotations (the also-receive one is kept);
   * spec and status are shared.
   */
  public static EgressService egressService(EgressService es) {
    EgressService lean = es instanceof MalformedEgressService m ? new MalformedEgressService(m.problem())
        : new EgressService();
    if (es.getApiVersion() != null) {
      lean.setApiVersion(es.getApiVersion());
    }
    if (es.getKind() != null) {
      lean.setKind(es.getKind());
    }
    ObjectMeta meta = es.getMetadata() == null ? new ObjectMeta() : es.getMetadata();
    lean.setMetadata(new ObjectMetaBuilder(meta)
        .withNamespace(intern(meta.getNamespace()))
        .withManagedFields((List<ManagedFieldsEntry>) null)
        .withAnnotations(keptAnnotations(meta))
        .build());
    lean.setSpec(es.getSpec());
    lean.setStatus(es.getStatus());
    return lean;
  }

  /** Only the allocator's also-receive annotation is plan input; the others (often large) are dropped. */
  private static Map<String, String> keptAnnotations(ObjectMeta meta) {
    String node = meta.getAnnotations() == null ? null
        : meta.getAnnotations().get(io.egressservice.plan.EgressServiceInfo.ALSO_RECEIVE_ANNOTATION);
    return node == null ? null : Map.of(io.egressservice.plan.EgressServiceInfo.ALSO_RECEIVE_ANNOTATION, node);
  }

  /**
   * Identity, labels, {@code spec.type/clusterIP/clusterIPs/externalTrafficPolicy/ports[].nodePort/selector},
   * {@code status.loadBalancer.ingress[].ip/hostname}.
   */
  public static Service service(Service s) {
    Service lean = new Service();
    lean.setApiVersion(intern(s.getApiVersion()));
    lean.setKind(intern(s.getKind()));
    lean.setMetadata(meta(s.getMetadata(), m -> internAll(m.getLabels())));
    lean.setSpec(s.getSpec() == null ? null : serviceSpec(s.getSpec()));
    lean.setStatus(s.getStatus() == null ? null : serviceStatus(s.getStatus()));
    lean.setAdditionalProperties(NO_PROPERTIES);
    return lean;
  }

  private static ServiceSpec serviceSpec(ServiceSpec spec) {
    ServiceSpec lean = new ServiceSpec();
    lean.setType(intern(spec.getType()));
    lean.setClusterIP(spec.getClusterIP());
    lean.setClusterIPs(copy(spec.getClusterIPs(), Function.identity()));
    lean.setExternalTrafficPolicy(intern(spec.getExternalTrafficPolicy()));
    lean.setExternalIPs(List.of());
    lean.setIpFamilies(List.of());
    lean.setLoadBalancerSourceRanges(List.of());
    lean.setPorts(copy(spec.getPorts(), LeanObjects::servicePort));
    lean.setSelector(internAll(spec.getSelector()));
    lean.setAdditionalProperties(NO_PROPERTIES);
    return lean;
  }

  /** Only the node port (OVN-Kubernetes' ETP=Local rule matches it). */
  private static ServicePort servicePort(ServicePort p) {
    ServicePort lean = new ServicePort();
    lean.setNodePort(p.getNodePort());
    lean.setAdditionalProperties(NO_PROPERTIES);
    return lean;
  }

  private static ServiceStatus serviceStatus(ServiceStatus status) {
    LoadBalancerStatus loadBalancer = new LoadBalancerStatus();
    loadBalancer.setIngress(status.getLoadBalancer() == null ? List.of()
        : copy(status.getLoadBalancer().getIngress(), LeanObjects::ingress));
    loadBalancer.setAdditionalProperties(NO_PROPERTIES);
    ServiceStatus lean = new ServiceStatus();
    lean.setLoadBalancer(loadBalancer);
    lean.setConditions(List.of());
    lean.setAdditionalProperties(NO_PROPERTIES);
    return lean;
  }

  private static LoadBalancerIngress ingress(LoadBalancerIngress i) {
    LoadBalancerIngress lean = new LoadBalancerIngress();
    lean.setIp(i.getIp());
    lean.setHostname(i.getHostname());
    lean.setPorts(List.of());
    lean.setAdditionalProperties(NO_PROPERTIES);
    return lean;
  }

  /**
   * Identity, the service-name and managed-by labels alone, {@code addressType},
   * {@code endpoints[].addresses/nodeName/targetRef.kind/targetRef.namespace}.
   */
  public static EndpointSlice endpointSlice(EndpointSlice s) {
    EndpointSlice lean = new EndpointSlice();
    lean.setApiVersion(intern(s.getApiVersion()));
    lean.setKind(intern(s.getKind()));
    lean.setMetadata(meta(s.getMetadata(), m -> {
      Map<String, String> labels = m.getLabels() == null ? Map.of() : m.getLabels();
      Map<String, String> kept = new HashMap<>(4);
      for (String key : List.of(PlanInputs.SERVICE_NAME_LABEL, EndpointSliceInfo.MANAGED_BY_LABEL)) {
        String value = labels.get(key);
        if (value != null) {
          kept.put(key, value.intern());
        }
      }
      return Map.copyOf(kept);
    }));
    lean.setAddressType(intern(s.getAddressType()));
    lean.setEndpoints(copy(s.getEndpoints(), e -> endpoint(s, e)));
    lean.setPorts(List.of());
    lean.setAdditionalProperties(NO_PROPERTIES);
    return lean;
  }

  private static Endpoint endpoint(EndpointSlice slice, Endpoint e) {
    Endpoint lean = new Endpoint();
    lean.setAddresses(copy(e.getAddresses(), Function.identity()));
    lean.setNodeName(intern(e.getNodeName()));
    PlanInputs.foreignPod(slice, e).ifPresent(t -> {
      ObjectReference target = new ObjectReference();
      target.setKind(intern(t.getKind()));
      target.setNamespace(intern(t.getNamespace()));
      target.setAdditionalProperties(NO_PROPERTIES);
      lean.setTargetRef(target);
    });
    lean.setDeprecatedTopology(Map.of());
    lean.setAdditionalProperties(NO_PROPERTIES);
    return lean;
  }

  /**
   * Identity, labels, {@code spec.podCIDR(s)/unschedulable}, {@code status.addresses[].type/address},
   * {@code status.conditions[].type/status}.
   */
  public static Node node(Node n) {
    Node lean = new Node();
    lean.setApiVersion(intern(n.getApiVersion()));
    lean.setKind(intern(n.getKind()));
    lean.setMetadata(meta(n.getMetadata(), m -> internAll(m.getLabels())));
    lean.setSpec(n.getSpec() == null ? null : nodeSpec(n.getSpec()));
    lean.setStatus(n.getStatus() == null ? null : nodeStatus(n.getStatus()));
    lean.setAdditionalProperties(NO_PROPERTIES);
    return lean;
  }

  private static NodeSpec nodeSpec(NodeSpec spec) {
    NodeSpec lean = new NodeSpec();
    lean.setPodCIDR(spec.getPodCIDR());
    lean.setPodCIDRs(copy(spec.getPodCIDRs(), Function.identity()));
    lean.setUnschedulable(spec.getUnschedulable());
    lean.setTaints(List.of());
    lean.setAdditionalProperties(NO_PROPERTIES);
    return lean;
  }

  private static NodeStatus nodeStatus(NodeStatus status) {
    NodeStatus lean = new NodeStatus();
    lean.setAddresses(copy(status.getAddresses(), a -> {
      NodeAddress address = new NodeAddress();
      address.setType(intern(a.getType()));
      address.setAddress(a.getAddress());
      address.setAdditionalProperties(NO_PROPERTIES);
      return address;
    }));
    lean.setConditions(copy(status.getConditions(), c -> {
      NodeCondition condition = new NodeCondition();
      condition.setType(intern(c.getType()));
      condition.setStatus(intern(c.getStatus()));
      condition.setAdditionalProperties(NO_PROPERTIES);
      return condition;
    }));
    lean.setAllocatable(Map.of());
    lean.setCapacity(Map.of());
    lean.setImages(List.of());
    lean.setRuntimeHandlers(List.of());
    lean.setVolumesAttached(List.of());
    lean.setVolumesInUse(List.of());
    lean.setAdditionalProperties(NO_PROPERTIES);
    return lean;
  }

  private static ObjectMeta meta(ObjectMeta full, Function<ObjectMeta, Map<String, String>> labels) {
    ObjectMeta m = full == null ? new ObjectMeta() : full;
    ObjectMeta lean = new ObjectMeta();
    lean.setName(m.getName());
    lean.setNamespace(intern(m.getNamespace()));
    lean.setUid(m.getUid());
    lean.setResourceVersion(m.getResourceVersion());
    lean.setCreationTimestamp(m.getCreationTimestamp());
    lean.setDeletionTimestamp(m.getDeletionTimestamp());
    lean.setLabels(labels.apply(m));
    lean.setAnnotations(Map.of());
    lean.setFinalizers(List.of());
    lean.setManagedFields(List.of());
    lean.setOwnerReferences(List.of());
    lean.setAdditionalProperties(NO_PROPERTIES);
    return lean;
  }

  /** An immutable copy without null entries, each mapped; absent is empty. */
  private static <T, R> List<R> copy(List<T> list, Function<T, R> copy) {
    return list == null ? List.of() : list.stream().filter(Objects::nonNull).map(copy).toList();
  }

  /** Interned keys and values; entries with a null value dropped (readers take them as absent). */
  private static Map<String, String> internAll(Map<String, String> labels) {
    if (labels == null) {
      return Map.of();
    }
    Map<String, String> out = new HashMap<>(labels.size() * 4 / 3 + 1);
    labels.forEach((k, v) -> {
      if (k != null && v != null) {
        out.put(k.intern(), v.intern());
      }
    });
    return Map.copyOf(out);
  }

  private static String intern(String s) {
    return s == null ? null : s.intern();
  }
}
