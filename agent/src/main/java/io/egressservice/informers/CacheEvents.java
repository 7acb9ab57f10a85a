package io.egressservice.informers;

import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Delivers the changes of the caches to the handlers of {@link ClusterInformers#addEventHandler}, in the
 * order the caches changed: the changes are queued while the cache's lock is held, and one thread delivers
 * them for all kinds. So an EgressService's add reaches a handler before the adds of the Service and slices it
 * brought into the cache, and a backfilled object's add before the watch's next update of it.
 *
 * <p>The handler lists are read and written on the delivery thread only: a handler registered while changes
 * are queued sees exactly those queued after its registration, after the adds of what the cache held then.
 */
final class CacheEvents implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(CacheEvents.class);

  private final ExecutorService thread;
  private final Map<Class<?>, List<ResourceEventHandler<?>>> handlers = new HashMap<>();

  CacheEvents(String threadName) {
    thread = Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, threadName);
      t.setDaemon(true);
      return t;
    });
  }

  /** {@code present}: what the cache holds now, delivered to this handler alone as adds. */
  <T> void register(Class<T> kind, ResourceEventHandler<T> handler, List<T> present) {
    submit(() -> {
      present.forEach(o -> deliver(handler, h -> h.onAdd(o)));
      handlers.computeIfAbsent(kind, k -> new ArrayList<>()).add(handler);
    });
  }

  <T> void added(Class<T> kind, T obj) {
    each(kind, h -> h.onAdd(obj));
  }

  <T> void updated(Class<T> kind, T oldObj, T newObj) {
    each(kind, h -> h.onUpdate(oldObj, newObj));
  }

  <T> void deleted(Class<T> kind, T obj) {
    each(kind, h -> h.onDelete(obj, false));
  }

  <T> void nothing(Class<T> kind) {
    each(kind, ResourceEventHandler::onNothing);
  }

  @SuppressWarnings("unchecked")
  private <T> void each(Class<T> kind, Consumer<ResourceEventHandler<T>> call) {
    submit(() -> {
      for (ResourceEventHandler<?> h : handlers.getOrDefault(kind, List.of())) {
        deliver((ResourceEventHandler<T>) h, call);
      }
    });
  }

  private static <T> void deliver(ResourceEventHandler<T> handler, Consumer<ResourceEventHandler<T>> call) {
    try {
      call.accept(handler);
    } catch (RuntimeException e) {
      LOG.warn("an informer event handler failed: {}", e.toString(), e);
    }
  }

  private void submit(Runnable delivery) {
    try {
      thread.execute(delivery);
    } catch (RejectedExecutionException e) {
      // closed: nobody listens any more
    }
  }

  @Override
  public void close() {
    thread.shutdownNow();
  }
}
