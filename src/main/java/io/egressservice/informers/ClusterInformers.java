package io.egressservice.informers;

import io.egressservice.objects.ClusterObjects;
import io.egressservice.objects.PlanInputs;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.fabric8.kubernetes.client.informers.cache.BasicItemStore;
import io.fabric8.kubernetes.client.informers.cache.Cache;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.UnaryOperator;
import org.ovn.k8s.v1.EgressService;

/**
 * The four cluster-wide informers (EgressService, Service, EndpointSlice, Node) that the node agent
 * and the allocator both read: one set per process, so a node runs one watch per kind and one copy
 * of each cache, however many parts of the agent use them.
 *
 * <p>EndpointSlices are watched only with the {@code kubernetes.io/service-name} label: a slice
 * without it belongs to no Service, so no EgressService can use it. The caches keep a
 * {@linkplain LeanObjects lean copy} of each object, with only the fields the agent reads: a real
 * cluster's Services, EndpointSlices and Nodes are mostly managedFields, annotations, ports, endpoint
 * conditions and node images, times every Service, slice and node of the cluster.
 */
public final class ClusterInformers implements AutoCloseable {
  /** The kinds watched, in the order of {@link #all()}. */
  public static final List<Class<? extends HasMetadata>> KINDS =
      List.of(EgressService.class, Service.class, EndpointSlice.class, Node.class);

  private final SharedIndexInformer<EgressService> egressServices;
  private final SharedIndexInformer<Service> services;
  private final SharedIndexInformer<EndpointSlice> slices;
  private final SharedIndexInformer<Node> nodes;
  private final AtomicBoolean started = new AtomicBoolean();
  private final ApiConnectivity connectivity;

  private ClusterInformers(KubernetesClient client, long resyncMillis) {
    // runnableInformer + start() does not block on the initial list, so an unreachable API server
    // leaves everything as it is while the informers keep retrying.
    egressServices = client.resources(EgressService.class).inAnyNamespace().runnableInformer(resyncMillis);
    services = client.services().inAnyNamespace().runnableInformer(resyncMillis);
    slices = client.discovery().v1().endpointSlices().inAnyNamespace().withLabel(PlanInputs.SERVICE_NAME_LABEL)
        .runnableInformer(resyncMillis);
    nodes = client.nodes().runnableInformer(resyncMillis);
    egressServices.itemStore(new LeanItemStore<>(LeanObjects::egressService));
    services.itemStore(new LeanItemStore<>(LeanObjects::service));
    slices.itemStore(new LeanItemStore<>(LeanObjects::endpointSlice));
    nodes.itemStore(new LeanItemStore<>(LeanObjects::node));
    connectivity = new ApiConnectivity(all());
    for (SharedIndexInformer<? extends HasMetadata> i : all()) {
      i.exceptionHandler((isStarted, error) -> {
        connectivity.failed(i.getApiTypeClass().getSimpleName(), error);
        return true;
      });
    }
  }

  /**
   * An informer store that keeps the {@link LeanObjects} copy of each object it is given.
   *
   * <p>The store is where this has to happen: fabric8 7.5 has no transform hook on its informers (like
   * client-go's SetTransform), and its {@code ReducedStateItemStore} keeps chosen fields but rebuilds a
   * whole object through the JSON mapper on every get and list, while every reconcile and allocation pass
   * lists all the caches.
   *
   * <p>Event handlers see both kinds of object. fabric8 hands them the object it decoded from the API
   * (adds, the new side of an update, a watched delete) but what the store holds for the old side of an
   * update, for resyncs and for deletions found on a relist. A handler that compares old with new
   * therefore compares a lean copy with a full object; that works because both project to the same plan
   * and allocator inputs ({@code LeanObjectsTest}). The full object is garbage once the handlers ran.
   */
  static final class LeanItemStore<T extends HasMetadata> extends BasicItemStore<T> {
    private final UnaryOperator<T> lean;

    LeanItemStore(UnaryOperator<T> lean) {
      super(Cache::metaNamespaceKeyFunc);
      this.lean = lean;
    }

    @Override
    public T put(String key, T obj) {
      return super.put(key, lean.apply(obj));
    }
  }

  /**
   * Creates the informers, not started yet: add handlers, then {@link #start()}.
   *
   * @param resync how often every cached object is delivered again as an update ({@code 0}: never)
   */
  public static ClusterInformers create(KubernetesClient client, Duration resync) {
    return new ClusterInformers(client, resync.toMillis());
  }

  public SharedIndexInformer<EgressService> egressServices() {
    return egressServices;
  }

  public SharedIndexInformer<Service> services() {
    return services;
  }

  public SharedIndexInformer<EndpointSlice> endpointSlices() {
    return slices;
  }

  public SharedIndexInformer<Node> nodes() {
    return nodes;
  }

  public List<SharedIndexInformer<? extends HasMetadata>> all() {
    return List.of(egressServices, services, slices, nodes);
  }

  /** Starts the informers once; later calls do nothing. Returns at once. */
  public void start() {
    if (started.compareAndSet(false, true)) {
      all().forEach(SharedIndexInformer::start);
      connectivity.start();
    }
  }

  /** Whether, and since when, each kind's watch hears from the API server. */
  public ApiConnectivity connectivity() {
    return connectivity;
  }

  public boolean hasSynced() {
    return all().stream().allMatch(SharedIndexInformer::hasSynced);
  }

  /** Whether an EgressService of this namespace and name is in the cache. */
  public boolean hasEgressService(String namespace, String name) {
    return egressServices.getStore().getByKey(namespace + "/" + name) != null;
  }

  /** What the caches hold now. */
  public ClusterObjects snapshot() {
    return new ClusterObjects(egressServices.getStore().list(), services.getStore().list(), slices.getStore().list(),
        nodes.getStore().list());
  }

  /** Stops the watches; the caches stay readable. */
  @Override
  public void close() {
    connectivity.close();
    all().forEach(SharedIndexInformer::close);
  }
}
