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
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.UnaryOperator;
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
 * (no events, absent from {@code get}, {@code owned} and {@link Store#visible()}) but still kept current by the
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

  final Store<EgressService> egressServices;
  final Store<Service> services;
  final Store<EndpointSlice> slices;
  final Store<Node> nodes;

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
    egressServices = new Store<>(EgressService.class, LeanObjects::egressService, null, this::want, this::unwant);
    services = new Store<>(Service.class, LeanObjects::service, Cache::metaNamespaceKeyFunc, o -> { }, o -> { });
    slices = new Store<>(EndpointSlice.class, LeanObjects::endpointSlice, OptInCaches::serviceKey, o -> { }, o -> { });
    nodes = new Store<>(Node.class, LeanObjects::node, null, o -> { }, o -> { });
    backfills.scheduleWithFixedDelay(this::sweep, SWEEP_MILLIS, SWEEP_MILLIS, TimeUnit.MILLISECONDS);
  }

  /** The key of the Service (and so of the EgressService) a slice belongs to; "" without the label. */
  private static String serviceKey(EndpointSlice slice) {
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
      List.of(egressServices, services, slices, nodes).forEach(s -> s.changedAt.clear());
    }
  }

  /**
   * Registers a handler for a kind: it gets an add for each object cached now, then every change, through
   * {@link CacheEvents}.
   */
  <T extends HasMetadata> void register(Store<T> store, ResourceEventHandler<T> handler) {
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

  private static boolean newer(String candidate, String cached) {
    try {
      return Long.parseLong(candidate) > Long.parseLong(cached);
    } catch (NumberFormatException e) {
      // resourceVersions are opaque to clients; when they are not numbers, a different one is taken as newer
      return !Objects.equals(candidate, cached);
    }
  }

  /**
   * One kind's cache: the lean copies of the objects wanted or parked, an index of them by the EgressService that
   * makes them wanted, and the events of their changes (of the objects wanted only). Its writes take the shared
   * lock; its reads do not. The {@link ItemStore} methods fabric8 calls ({@code put}, {@code remove},
   * {@code values}, {@code keySet}, {@code size}) see the parked objects too, so that the informer keeps them
   * current; {@code get}, {@link #owned} and {@link #visible} are what readers see, without them.
   */
  final class Store<T extends HasMetadata> implements ItemStore<T> {
    final Class<T> kind;
    private final UnaryOperator<T> lean;
    /** The EgressService key that makes an object wanted; null: every object of the kind is. */
    private final Function<T, String> owner;
    private final Consumer<T> entered;
    private final Consumer<T> left;
    private final ConcurrentHashMap<String, T> items = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, Set<String>> byOwner = new ConcurrentHashMap<>();
    /** While a backfill is pending: the sequence number of the informer's last change of each key. */
    private final Map<String, Long> changedAt = new HashMap<>();

    private Store(Class<T> kind, UnaryOperator<T> lean, Function<T, String> owner, Consumer<T> entered,
        Consumer<T> left) {
      this.kind = kind;
      this.lean = lean;
      this.owner = owner;
      this.entered = entered;
      this.left = left;
    }

    /** Kept in the cache: wanted, or parked. */
    private boolean wanted(T obj) {
      return owner == null || wanted.contains(owner.apply(obj)) || parked.containsKey(owner.apply(obj));
    }

    /** Seen by readers and announced: wanted (not parked). */
    private boolean visible(T obj) {
      return owner == null || wanted.contains(owner.apply(obj));
    }

    /** The informer's put (a listed or watched object). Returns what was cached under the key, if kept. */
    @Override
    public T put(String key, T obj) {
      synchronized (lock) {
        informerChanged(key);
        if (wanted(obj)) {
          return keep(key, obj);
        }
        drop(key);
        return null;
      }
    }

    /** The informer's remove (a watched delete, or a relist that no longer has the key). */
    @Override
    public T remove(String key) {
      synchronized (lock) {
        informerChanged(key);
        return drop(key);
      }
    }

    private void informerChanged(String key) {
      if (!pending.isEmpty()) {
        changedAt.put(key, ++sequence);
      }
    }

    /** An object a backfill read, unless the informer changed its key since the backfill began. */
    private void backfill(T obj, long since) {
      String key = getKey(obj);
      Long changed = changedAt.get(key);
      if ((changed != null && changed > since) || !visible(obj)) {
        return;
      }
      T cached = items.get(key);
      if (cached == null || newer(obj.getMetadata().getResourceVersion(), cached.getMetadata().getResourceVersion())) {
        keep(key, obj);
      }
    }

    private T keep(String key, T obj) {
      T old = items.get(key);
      if (old != null && Objects.equals(old.getMetadata().getResourceVersion(), obj.getMetadata().getResourceVersion())) {
        return old; // a relist finding it unchanged: the cached copy stays, and fabric8 announces nothing either
      }
      T copy = lean.apply(obj);
      items.put(key, copy);
      index(key, old, copy);
      boolean wasVisible = old != null && visible(old);
      boolean isVisible = visible(copy);
      if (!wasVisible && isVisible) {
        events.added(kind, copy);
        entered.accept(copy);
      } else if (wasVisible && isVisible) {
        events.updated(kind, old, copy);
      } else if (wasVisible) {
        // a slice relabelled to a Service whose EgressService is parked: gone, as readers see it
        events.deleted(kind, old);
        left.accept(old);
      }
      return old;
    }

    private T drop(String key) {
      T old = items.remove(key);
      if (old != null) {
        index(key, old, null);
        if (visible(old)) {
          events.deleted(kind, old);
          left.accept(old);
        }
      }
      return old;
    }

    /** Its EgressService left (already out of {@code wanted}): what it owns is hidden, announced as deletes. */
    private void park(String ownerKey) {
      ownedKeys(ownerKey).stream().map(items::get).filter(Objects::nonNull).forEach(o -> events.deleted(kind, o));
    }

    /** Its EgressService came back (already in {@code wanted}): what was parked is announced as adds. */
    private void unpark(String ownerKey) {
      ownedKeys(ownerKey).stream().map(items::get).filter(Objects::nonNull).forEach(o -> events.added(kind, o));
    }

    /** The parking of its EgressService ended: what it owns goes, silently (readers never saw it). */
    private void forget(String ownerKey) {
      for (String key : ownedKeys(ownerKey)) {
        T old = items.get(key);
        if (old != null && !visible(old)) {
          items.remove(key);
          index(key, old, null);
        }
      }
    }

    private void index(String key, T old, T now) {
      if (owner == null) {
        return;
      }
      String before = old == null ? null : owner.apply(old);
      String after = now == null ? null : owner.apply(now);
      if (Objects.equals(before, after)) {
        return;
      }
      if (before != null) {
        byOwner.computeIfPresent(before, (k, keys) -> {
          keys.remove(key);
          return keys.isEmpty() ? null : keys;
        });
      }
      if (after != null) {
        byOwner.computeIfAbsent(after, k -> ConcurrentHashMap.newKeySet()).add(key);
      }
    }

    private List<String> ownedKeys(String ownerKey) {
      return List.copyOf(byOwner.getOrDefault(ownerKey, Set.of()));
    }

    /** The cached objects an EgressService key makes wanted (none while it is parked). */
    List<T> owned(String ownerKey) {
      return ownedKeys(ownerKey).stream().map(items::get).filter(o -> o != null && visible(o)).toList();
    }

    /** What readers see: the cached objects, without the parked ones. */
    java.util.stream.Stream<T> visible() {
      return items.values().stream().filter(this::visible);
    }

    /**
     * Forwards the informer's resyncs of cached objects (fabric8 hands the same object as old and new) and
     * its "listed nothing"; its adds, updates and deletes are this store's own events.
     */
    ResourceEventHandler<T> resyncs() {
      return new ResourceEventHandler<>() {
        @Override
        public void onAdd(T obj) {}

        @Override
        public void onUpdate(T oldObj, T newObj) {
          if (oldObj == newObj) {
            synchronized (lock) {
              if (items.get(getKey(newObj)) == newObj && visible(newObj)) {
                events.updated(kind, newObj, newObj);
              }
            }
          }
        }

        @Override
        public void onDelete(T obj, boolean deletedFinalStateUnknown) {}

        @Override
        public void onNothing() {
          events.nothing(kind);
        }
      };
    }

    @Override
    public String getKey(T obj) {
      return Cache.metaNamespaceKeyFunc(obj);
    }

    @Override
    public java.util.stream.Stream<String> keySet() {
      return items.keySet().stream();
    }

    @Override
    public java.util.stream.Stream<T> values() {
      return items.values().stream();
    }

    @Override
    public int size() {
      return items.size();
    }

    /** Readers' view: null for a parked object. */
    @Override
    public T get(String key) {
      T obj = items.get(key);
      return obj == null || !visible(obj) ? null : obj;
    }
  }
}
