package io.egressservice.informers;

import io.egressservice.objects.PlanInputs;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.cache.Cache;
import io.fabric8.kubernetes.client.informers.cache.ItemStore;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.ovn.k8s.v1.EgressService;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The four caches, narrowed to what the EgressServices name: a Service is kept only while an EgressService
 * of its namespace and name is, an EndpointSlice only while its Service's is ({@code kubernetes.io/service-name}
 * label); every EgressService and every Node is kept. Each cache is the informer's {@link ItemStore}, so an
 * object that is not wanted is dropped as the informer decodes it, page by page, and costs nothing after.
 *
 * <p>The wanted set follows the EgressService cache. When an EgressService enters it after the Service and
 * slice informers have begun listing, what they already dropped is <em>backfilled</em>: one GET of the
 * Service and one LIST of its slices. When it leaves, its Service and slices leave too, as readers see it.
 *
 * <p>Parking. An EgressService deleted and created again at once (a GitOps tool's forced replace, often of
 * hundreds at a time) would cost a backfill each, one after another: under such a churn the backfills fall
 * behind the re-creates and the kernel loses the rules of nearly every service the API holds. So when an
 * EgressService leaves, its Service and slices are <em>parked</em> for {@link #PARKING}: hidden from readers
 * (no events, absent from {@code get}, {@code owned} and {@link OptInStore#visible()}) but still kept current by the
 * watches, which deliver every change of them. An EgressService that comes back within the grace finds them
 * there, announced as adds, without a request. Parked objects are part of what the informer sees of its store
 * ({@code values()}, {@code keySet()}), so a relist after a watch gap removes those deleted meanwhile. Memory:
 * parking keeps no more than the EgressServices of the last {@link #PARKING} made wanted, the same lean copies;
 * at 5,000 services all deleted at once that is the 5,000 services' objects for one grace more. An EgressService
 * whose backfill had not completed is not parked (its objects may be incomplete): it is dropped, as before.
 *
 * <p>Races with the watches. The informers keep delivering while a backfill is in flight, and the watch is
 * the authority: it delivers every change in order, so once a key is wanted whatever the watch does to it
 * (put or delete) is the newest state known. The caches therefore note, while a backfill is pending, the
 * sequence number of the informers' last change to each key; a backfilled object whose key the informer
 * changed after the backfill began is not applied (an update that came meanwhile is not undone, and a
 * delete that overtook the GET does not resurrect the object). An object already cached is replaced only by
 * a newer resourceVersion. A backfill of an EgressService deleted (or re-created) meanwhile is discarded.
 *
 * <p>Events. fabric8's own notifications cannot describe these caches: a store that does not keep an object
 * makes the informer announce every later change of it as an add, and backfills and drops happen outside
 * the informer. So the caches emit their own, under the lock that orders every change ({@link CacheEvents}):
 * an add when an object enters, an update when its resourceVersion changes, a delete when it leaves, and
 * the informers' resyncs of what is cached. Unlike fabric8, the adds of an initial listing are delivered as
 * they are listed, not deferred to its end: readers wait for {@code hasSynced()} before they read.
 *
 * <p>fabric8's namespace index is removed from these informers: it is updated with what the informer puts,
 * kept or not, and not by backfills and drops, so it would hold every key of the cluster and go stale.
 */
final class OptInCaches implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(OptInCaches.class);
  private static final long FIRST_RETRY_MILLIS = 200;
  private static final long MAX_RETRY_MILLIS = Duration.ofSeconds(30).toMillis();
  /** How long the Service and slices of an EgressService that left stay parked. */
  static final Duration PARKING = Duration.ofSeconds(30);
  private static final long SWEEP_MILLIS = 1000;

  /** What one backfill reads from the API server: the Service (absent: not there) and its slices. */
  record Fetched(Optional<Service> service, List<EndpointSlice> slices) {}

  /** The API calls of a backfill, by namespace and Service name. */
  interface Fetcher {
    Fetched fetch(String namespace, String name);
  }

  private record Backfill(String key, long since) {}

  private final Object lock = new Object();
  private final CacheEvents events;
  private final Fetcher fetcher;
  private final ScheduledExecutorService backfills;
  private final Consumer<RuntimeException> fetchFailed;
  /** Keys (namespace/name) of the EgressServices cached. Written under {@link #lock}, like everything below. */
  private final Set<String> wanted = ConcurrentHashMap.newKeySet();
  /**
   * Keys of EgressServices that left, to when their parked objects go (System.nanoTime()). This and
   * {@link #wanted} are concurrent: readers filter by them without the lock.
   */
  private final Map<String, Long> parked = new ConcurrentHashMap<>();
  private final java.util.function.LongSupplier nanoTime;
  private final Map<String, Backfill> pending = new HashMap<>();
  private long sequence;
  private boolean dependentsListing;
  private boolean closed;
  private final OptInStore.Shared shared = new OptInStore.Shared() {
    @Override
    public Object lock() {
      return lock;
    }

    @Override
    public CacheEvents events() {
      return events;
    }

    @Override
    public boolean wanted(String ownerKey) {
      return wanted.contains(ownerKey);
    }

    @Override
    public boolean parked(String ownerKey) {
      return parked.containsKey(ownerKey);
    }

    @Override
    public OptionalLong nextChange() {
      return pending.isEmpty() ? OptionalLong.empty() : OptionalLong.of(++sequence);
    }
  };

  final OptInStore<EgressService> egressServices;
  final OptInStore<Service> services;
  final OptInStore<EndpointSlice> slices;
  final OptInStore<Node> nodes;

  OptInCaches(CacheEvents events, Fetcher fetcher, Consumer<RuntimeException> fetchFailed) {
    this(events, fetcher, fetchFailed, System::nanoTime);
  }

  OptInCaches(CacheEvents events, Fetcher fetcher, Consumer<RuntimeException> fetchFailed,
      java.util.function.LongSupplier nanoTime) {
    this.events = events;
    this.nanoTime = nanoTime;
    this.fetcher = fetcher;
    this.fetchFailed = fetchFailed;
    this.backfills = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "informer-backfill");
      t.setDaemon(true);
      return t;
    });
    egressServices = new OptInStore<>(shared, EgressService.class, LeanObjects::egressService, null, this::want, this::unwant);
    services = new OptInStore<>(shared, Service.class, LeanObjects::service, Cache::metaNamespaceKeyFunc, o -> { }, o -> { });
    slices = new OptInStore<>(shared, EndpointSlice.class, LeanObjects::endpointSlice, OptInCaches::serviceKey, o -> { }, o -> { });
    nodes = new OptInStore<>(shared, Node.class, LeanObjects::node, null, o -> { }, o -> { });
    backfills.scheduleWithFixedDelay(this::sweep, SWEEP_MILLIS, SWEEP_MILLIS, TimeUnit.MILLISECONDS);
  }

  /** The key of the Service (and so of the EgressService) a slice belongs to; "" without the label. */
  static String serviceKey(EndpointSlice slice) {
    String name = PlanInputs.serviceName(slice);
    return name == null || name.isEmpty() ? "" : Cache.namespaceKeyFunc(slice.getMetadata().getNamespace(), name);
  }

  /**
   * The Service and slice informers begin listing after this: from now on an EgressService that enters the
   * cache is backfilled (before, their first listing is filtered by it). False once closed.
   */
  boolean dependentsListing() {
    synchronized (lock) {
      dependentsListing = !closed;
      return dependentsListing;
    }
  }

  /** Whether the backfills all completed (tests and readiness). */
  boolean backfillsDone() {
    synchronized (lock) {
      return pending.isEmpty();
    }
  }

  private void want(EgressService es) {
    String key = Cache.metaNamespaceKeyFunc(es);
    wanted.add(key);
    if (parked.remove(key) != null) {
      // the watches kept them current while parked: nothing to fetch
      services.unpark(key);
      slices.unpark(key);
      return;
    }
    if (dependentsListing && !closed) {
      Backfill b = new Backfill(key, sequence);
      pending.put(key, b);
      schedule(b, 0, 0);
    }
  }

  private void unwant(EgressService es) {
    String key = Cache.metaNamespaceKeyFunc(es);
    wanted.remove(key);
    if (pending.remove(key) == null && !closed) {
      parked.put(key, nanoTime.getAsLong() + PARKING.toNanos());
      services.park(key);
      slices.park(key);
    } else {
      services.drop(key);
      for (String slice : slices.ownedKeys(key)) {
        slices.drop(slice);
      }
    }
    forgetChangesIfIdle();
  }

  /** Forgets the objects of EgressServices parked for longer than {@link #PARKING}. */
  void sweep() {
    synchronized (lock) {
      long now = nanoTime.getAsLong();
      for (var it = parked.entrySet().iterator(); it.hasNext(); ) {
        var e = it.next();
        if (now - e.getValue() >= 0) {
          it.remove();
          services.forget(e.getKey());
          slices.forget(e.getKey());
        }
      }
    }
  }

  /** How many EgressServices have their objects parked (tests). */
  int parkedCount() {
    synchronized (lock) {
      return parked.size();
    }
  }

  private void schedule(Backfill b, int attempt, long delayMillis) {
    try {
      backfills.schedule(() -> backfill(b, attempt), delayMillis, TimeUnit.MILLISECONDS);
    } catch (RejectedExecutionException e) {
      // closed
    }
  }

  private boolean current(Backfill b) {
    return !closed && pending.get(b.key()) == b;
  }

  private void backfill(Backfill b, int attempt) {
    synchronized (lock) {
      if (!current(b)) {
        return;
      }
    }
    String[] nsName = b.key().split("/", 2);
    Fetched fetched;
    try {
      fetched = fetcher.fetch(nsName[0], nsName[1]);
    } catch (RuntimeException e) {
      fetchFailed.accept(e);
      long delay = Math.min(MAX_RETRY_MILLIS, FIRST_RETRY_MILLIS << Math.min(attempt, 20));
      LOG.debug("backfill of {} failed (attempt {}), retrying in {} ms: {}", b.key(), attempt + 1, delay, e.toString());
      synchronized (lock) {
        if (current(b)) {
          schedule(b, attempt + 1, delay);
        }
      }
      return;
    }
    synchronized (lock) {
      if (!current(b)) {
        return;
      }
      pending.remove(b.key());
      fetched.service().ifPresent(s -> services.backfill(s, b.since()));
      fetched.slices().stream().filter(s -> b.key().equals(serviceKey(s))).forEach(s -> slices.backfill(s, b.since()));
      forgetChangesIfIdle();
    }
  }

  private void forgetChangesIfIdle() {
    if (pending.isEmpty()) {
      List.of(egressServices, services, slices, nodes).forEach(OptInStore::forgetChanges);
    }
  }

  /**
   * Registers a handler for a kind: it gets an add for each object cached now, then every change, through
   * {@link CacheEvents}.
   */
  <T extends HasMetadata> void register(OptInStore<T> store, ResourceEventHandler<T> handler) {
    synchronized (lock) {
      events.register(store.kind, handler, store.values().toList());
    }
  }

  @Override
  public void close() {
    synchronized (lock) {
      closed = true;
      pending.clear();
      parked.clear();
    }
    backfills.shutdownNow();
  }
}
