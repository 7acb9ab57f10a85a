package io.egressservice.informers;

import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.cache.Cache;
import io.fabric8.kubernetes.client.informers.cache.ItemStore;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;

/**
 * One kind's cache: the lean copies of the objects wanted or parked, an index of them by the EgressService that
 * makes them wanted, and the events of their changes (of the objects wanted only). Its writes take the shared
 * lock; its reads do not. The {@link ItemStore} methods fabric8 calls ({@code put}, {@code remove},
 * {@code values}, {@code keySet}, {@code size}) see the parked objects too, so that the informer keeps them
 * current; {@code get}, {@link #owned} and {@link #visible} are what readers see, without them.
 */
final class OptInStore<T extends HasMetadata> implements ItemStore<T> {
  /** What the four stores share, kept by {@link OptInCaches}. */
  interface Shared {
    /** The lock that orders every change of every store (and the events they emit). */
    Object lock();

    CacheEvents events();

    /** Whether the EgressService of this key is cached. */
    boolean wanted(String ownerKey);

    /** Whether the objects of this EgressService key are parked. */
    boolean parked(String ownerKey);

    /** While a backfill is pending: the sequence number of a new informer change; empty otherwise. */
    OptionalLong nextChange();
  }

  private final Shared shared;
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

  OptInStore(Shared shared, Class<T> kind, UnaryOperator<T> lean, Function<T, String> owner, Consumer<T> entered,
      Consumer<T> left) {
    this.shared = shared;
    this.kind = kind;
    this.lean = lean;
    this.owner = owner;
    this.entered = entered;
    this.left = left;
  }

  /** Kept in the cache: wanted, or parked. */
  private boolean wanted(T obj) {
    return owner == null || shared.wanted(owner.apply(obj)) || shared.parked(owner.apply(obj));
  }

  /** Seen by readers and announced: wanted (not parked). */
  private boolean visible(T obj) {
    return owner == null || shared.wanted(owner.apply(obj));
  }

  /** The informer's put (a listed or watched object). Returns what was cached under the key, if kept. */
  @Override
  public T put(String key, T obj) {
    synchronized (shared.lock()) {
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
    synchronized (shared.lock()) {
      informerChanged(key);
      return drop(key);
    }
  }

  private void informerChanged(String key) {
    shared.nextChange().ifPresent(n -> changedAt.put(key, n));
  }

  /** No backfill is pending: the informer's changes need no more noting. */
  void forgetChanges() {
    changedAt.clear();
  }

  /** An object a backfill read, unless the informer changed its key since the backfill began. */
  void backfill(T obj, long since) {
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
      shared.events().added(kind, copy);
      entered.accept(copy);
    } else if (wasVisible && isVisible) {
      shared.events().updated(kind, old, copy);
    } else if (wasVisible) {
      // a slice relabelled to a Service whose EgressService is parked: gone, as readers see it
      shared.events().deleted(kind, old);
      left.accept(old);
    }
    return old;
  }

  T drop(String key) {
    T old = items.remove(key);
    if (old != null) {
      index(key, old, null);
      if (visible(old)) {
        shared.events().deleted(kind, old);
        left.accept(old);
      }
    }
    return old;
  }

  /** Its EgressService left (already out of {@code wanted}): what it owns is hidden, announced as deletes. */
  void park(String ownerKey) {
    ownedKeys(ownerKey).stream().map(items::get).filter(Objects::nonNull).forEach(o -> shared.events().deleted(kind, o));
  }

  /** Its EgressService came back (already in {@code wanted}): what was parked is announced as adds. */
  void unpark(String ownerKey) {
    ownedKeys(ownerKey).stream().map(items::get).filter(Objects::nonNull).forEach(o -> shared.events().added(kind, o));
  }

  /** The parking of its EgressService ended: what it owns goes, silently (readers never saw it). */
  void forget(String ownerKey) {
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

  List<String> ownedKeys(String ownerKey) {
    return List.copyOf(byOwner.getOrDefault(ownerKey, Set.of()));
  }

  /** The cached objects an EgressService key makes wanted (none while it is parked). */
  List<T> owned(String ownerKey) {
    return ownedKeys(ownerKey).stream().map(items::get).filter(o -> o != null && visible(o)).toList();
  }

  /** What readers see: the cached objects, without the parked ones. */
  Stream<T> visible() {
    return items.values().stream().filter(this::visible);
  }

  /**
   * Forwards the informer's resyncs of cached objects (fabric8 hands the same object as old and new) and
   * its "listed nothing"; its adds, updates and deletes are this store's own shared.events().
   */
  ResourceEventHandler<T> resyncs() {
    return new ResourceEventHandler<>() {
      @Override
      public void onAdd(T obj) {}

      @Override
      public void onUpdate(T oldObj, T newObj) {
        if (oldObj == newObj) {
          synchronized (shared.lock()) {
            if (items.get(getKey(newObj)) == newObj && visible(newObj)) {
              shared.events().updated(kind, newObj, newObj);
            }
          }
        }
      }

      @Override
      public void onDelete(T obj, boolean deletedFinalStateUnknown) {}

      @Override
      public void onNothing() {
        shared.events().nothing(kind);
      }
    };
  }

  @Override
  public String getKey(T obj) {
    return Cache.metaNamespaceKeyFunc(obj);
  }

  @Override
  public Stream<String> keySet() {
    return items.keySet().stream();
  }

  @Override
  public Stream<T> values() {
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

  private static boolean newer(String candidate, String cached) {
    try {
      return Long.parseLong(candidate) > Long.parseLong(cached);
    } catch (NumberFormatException e) {
      // resourceVersions are opaque to clients; when they are not numbers, a different one is taken as newer
      return !Objects.equals(candidate, cached);
    }
  }
}
