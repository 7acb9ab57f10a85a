package io.egressservice.informers;

import io.egressservice.objects.ClusterObjects;
import io.egressservice.objects.PlanInputs;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.cache.Cache;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.ovn.k8s.v1.EgressService;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The four informers (EgressService, Service, EndpointSlice, Node) that the node agent and the allocator
 * both read: one set per process, so a node runs one watch per kind and one copy of each cache, however
 * many parts of the agent use them.
 *
 * <p>What they cache follows the opted-in set, not the cluster ({@link OptInCaches}): a Service only while
 * an EgressService of its namespace and name exists, an EndpointSlice only while its Service's does, each
 * EgressService and each Node. EndpointSlices are watched only with the {@code kubernetes.io/service-name}
 * label. The EgressService informer starts first, and the Service and slice informers once it has listed
 * (or after {@link #EGRESS_SERVICES_FIRST}), so that their first listing is already filtered; an
 * EgressService that arrives later fetches its Service and slices (a backfill), unless it left less than
 * {@link OptInCaches#PARKING} ago: then they are still there, parked and kept current by the watches (a mass
 * delete-and-re-create costs no request per service). Every list, the first and
 * each relist, is read in pages of {@link #PAGE}: a cold start in a cluster of 10,000 Services never holds
 * one response of all of them. The caches keep a {@linkplain LeanObjects lean copy} of each object.
 *
 * <p>Handlers registered through {@link #addEventHandler} see exactly the stream of the cached objects:
 * adds (backfills included), updates, deletes (drops included) and resyncs. Handlers added straight to an
 * informer ({@code services().addEventHandler}) see fabric8's notifications, which announce every change of
 * an object the cache does not keep as an add.
 */
public final class ClusterInformers implements AutoCloseable {
  /** The kinds watched, in the order of {@link #all()}. */
  public static final List<Class<? extends HasMetadata>> KINDS =
      List.of(EgressService.class, Service.class, EndpointSlice.class, Node.class);

  /** Objects per list request. */
  static final long PAGE = 500;
  /** How long the Service and slice informers wait for the EgressServices to be listed before they list. */
  static final Duration EGRESS_SERVICES_FIRST = Duration.ofSeconds(10);

  private static final Logger LOG = LoggerFactory.getLogger(ClusterInformers.class);

  private final SharedIndexInformer<EgressService> egressServices;
  private final SharedIndexInformer<Service> services;
  private final SharedIndexInformer<EndpointSlice> slices;
  private final SharedIndexInformer<Node> nodes;
  private final AtomicBoolean started = new AtomicBoolean();
  private final ApiConnectivity connectivity;
  private final CacheEvents events = new CacheEvents("informer-events");
  private final OptInCaches caches;
  private final Map<Class<?>, OptInStore<?>> stores;
  /** Present while the grant policy is enforced ({@link #followGrants}). */
  private volatile Optional<GrantInformers> grants = Optional.empty();

  private ClusterInformers(KubernetesClient client, long resyncMillis, ApiConnectivity.Probing probing) {
    // runnableInformer + start() does not block on the initial list, so an unreachable API server
    // leaves everything as it is while the informers keep retrying.
    egressServices = client.resources(EgressService.class).inAnyNamespace().withLimit(PAGE)
        .runnableInformer(resyncMillis);
    services = client.services().inAnyNamespace().withLimit(PAGE).runnableInformer(resyncMillis);
    slices = client.discovery().v1().endpointSlices().inAnyNamespace().withLabel(PlanInputs.SERVICE_NAME_LABEL)
        .withLimit(PAGE).runnableInformer(resyncMillis);
    nodes = client.nodes().withLimit(PAGE).runnableInformer(resyncMillis);
    connectivity = new ApiConnectivity(all(), probing, String.valueOf(client.getMasterUrl()),
        Duration.ofMillis(Math.max(1, client.getConfiguration().getWatchReconnectInterval())));
    caches = new OptInCaches(events, (namespace, name) -> new OptInCaches.Fetched(
        Optional.ofNullable(client.services().inNamespace(namespace).withName(name).get()),
        client.discovery().v1().endpointSlices().inNamespace(namespace)
            .withLabel(PlanInputs.SERVICE_NAME_LABEL, name).list().getItems()),
        e -> connectivity.failed("Service", e));
    bind(egressServices, caches.egressServices);
    bind(services, caches.services);
    bind(slices, caches.slices);
    bind(nodes, caches.nodes);
    stores = Map.of(EgressService.class, caches.egressServices, Service.class, caches.services,
        EndpointSlice.class, caches.slices, Node.class, caches.nodes);
    for (SharedIndexInformer<? extends HasMetadata> i : all()) {
      i.addEventHandler(heard());
      i.exceptionHandler((isStarted, error) -> {
        connectivity.failed(i.getApiTypeClass().getSimpleName(), error);
        return true;
      });
    }
  }

  /** Tells the connectivity of every event a watch delivers; a resync (the same object again) is not one. */
  private <T extends HasMetadata> ResourceEventHandler<T> heard() {
    return new ResourceEventHandler<>() {
      @Override
      public void onAdd(T obj) {
        connectivity.heard();
      }

      @Override
      public void onUpdate(T oldObj, T newObj) {
        if (oldObj != newObj) {
          connectivity.heard();
        }
      }

      @Override
      public void onDelete(T obj, boolean deletedFinalStateUnknown) {
        connectivity.heard();
      }
    };
  }

  private static <T extends HasMetadata> void bind(SharedIndexInformer<T> informer, OptInStore<T> store) {
    informer.removeIndexer(Cache.NAMESPACE_INDEX);
    informer.itemStore(store);
    informer.addEventHandler(store.resyncs());
  }

  /**
   * Creates the informers, not started yet: add handlers, then {@link #start()}.
   *
   * @param resync how often every cached object is delivered again as an update ({@code 0}: never)
   */
  public static ClusterInformers create(KubernetesClient client, Duration resync) {
    return create(client, resync, new ApiConnectivity.Probing(client::getKubernetesVersion,
        ApiConnectivity.Probing.QUIET, ApiConnectivity.Probing.TIMEOUT));
  }

  /** As {@link #create(KubernetesClient, Duration)}, with how the API server is asked when it is quiet. */
  public static ClusterInformers create(KubernetesClient client, Duration resync, ApiConnectivity.Probing probing) {
    return new ClusterInformers(client, resync.toMillis(), probing);
  }

  /**
   * Handlers registered here see every object that enters or leaves the cache, backfills included: an add
   * for each, an update when its resourceVersion changes or at a resync, a delete when it leaves; in the order
   * the caches changed, on one thread for all kinds. A handler registered after the start first gets an
   * add for each object cached then.
   */
  @SuppressWarnings("unchecked")
  public <T extends HasMetadata> void addEventHandler(Class<T> kind, ResourceEventHandler<T> handler) {
    OptInStore<T> store = (OptInStore<T>) stores.get(kind);
    if (store == null) {
      throw new IllegalArgumentException("no informer for " + kind.getName() + "; the kinds are " + KINDS);
    }
    caches.register(store, handler);
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

  /**
   * Starts the informers once; later calls do nothing. Returns at once: the Service and slice informers start
   * when the EgressServices are listed, or after {@link #EGRESS_SERVICES_FIRST} (until then
   * {@link #hasSynced()} is false).
   */
  public void start() {
    if (started.compareAndSet(false, true)) {
      grants.ifPresent(GrantInformers::start);
      connectivity.start();
      nodes.start();
      CompletableFuture<Void> listed = egressServices.start().toCompletableFuture();
      CompletableFuture<Void> bound = CompletableFuture.runAsync(() -> { },
          CompletableFuture.delayedExecutor(EGRESS_SERVICES_FIRST.toMillis(), TimeUnit.MILLISECONDS));
      CompletableFuture.anyOf(listed, bound).whenComplete((ignored, error) -> {
        if (!listed.isDone()) {
          LOG.warn("EgressServices not listed after {} s: listing Services and EndpointSlices anyway; each"
              + " EgressService listed later fetches its own", EGRESS_SERVICES_FIRST.toSeconds());
        }
        if (caches.dependentsListing()) {
          services.start();
          slices.start();
        }
      });
    }
  }

  /**
   * Also watches Namespaces and the EgressServicePolicy ({@code --egress-service-policy=enforce}); before
   * {@link #start()}. Only then does the process need to read them.
   */
  public synchronized void followGrants(KubernetesClient client) {
    if (started.get()) {
      throw new IllegalStateException("followGrants after start");
    }
    if (grants.isEmpty()) {
      grants = Optional.of(new GrantInformers(client));
    }
  }

  /** The grant informers, when the policy is enforced. */
  public Optional<GrantInformers> grants() {
    return grants;
  }

  /** Whether, and since when, each kind's watch hears from the API server. */
  public ApiConnectivity connectivity() {
    return connectivity;
  }

  public boolean hasSynced() {
    return all().stream().allMatch(SharedIndexInformer::hasSynced) && grants.map(GrantInformers::hasSynced).orElse(true);
  }

  /**
   * Whether every kind's watch is open: from then on every change reaches the caches as an event. Before (the
   * start, or a re-watch after a drop) the API server replays what the watch missed from the list's
   * resourceVersion.
   */
  public boolean watching() {
    return all().stream().allMatch(SharedIndexInformer::isWatching) && grants.map(GrantInformers::watching).orElse(true);
  }

  /** Whether an EgressService of this namespace and name is in the cache. */
  public boolean hasEgressService(String namespace, String name) {
    return caches.egressServices.get(Cache.namespaceKeyFunc(namespace, name)) != null;
  }

  /** The cached Service of this namespace and name: present only while an EgressService names it. */
  public Optional<Service> service(String namespace, String name) {
    return Optional.ofNullable(caches.services.get(Cache.namespaceKeyFunc(namespace, name)));
  }

  /** The cached EndpointSlices of a Service (its {@code kubernetes.io/service-name} label), without listing. */
  public List<EndpointSlice> endpointSlicesOf(String namespace, String serviceName) {
    return caches.slices.owned(Cache.namespaceKeyFunc(namespace, serviceName));
  }

  /** Whether every backfill asked for so far has been applied (or abandoned with its EgressService). */
  boolean backfillsDone() {
    return caches.backfillsDone();
  }

  /** What the caches hold now. */
  public ClusterObjects snapshot() {
    return new ClusterObjects(caches.egressServices.visible().toList(), caches.services.visible().toList(),
        caches.slices.visible().toList(), caches.nodes.visible().toList(),
        grants.map(GrantInformers::snapshot).orElse(io.egressservice.objects.GrantObjects.none()));
  }

  /** Stops the watches; the caches stay readable. */
  @Override
  public void close() {
    connectivity.close();
    grants.ifPresent(GrantInformers::close);
    caches.close();
    all().forEach(SharedIndexInformer::close);
    events.close();
  }
}
