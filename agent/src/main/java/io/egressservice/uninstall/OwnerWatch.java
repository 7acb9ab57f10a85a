package io.egressservice.uninstall;

import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.Resource;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Watches the process's own workload ({@link Owner}) by name (a field selector on {@code metadata.name}, so its RBAC
 * can name it) while the process runs, and tells at SIGTERM whether the process is being uninstalled: the workload
 * is gone or being deleted. The view at SIGTERM is a GET when the API answers it, else the watch's latest: an
 * uninstall deletes the workload's RBAC right after the workload, before the garbage collector stops the pods, so
 * the GET may be refused by then, while the watch saw the deletion as it happened.
 *
 * <p>Only a deletion seen after the workload was seen present counts: a name or namespace that is wrong, or a watch
 * that never worked (RBAC missing), must never turn every restart into an uninstall. So a process started after its
 * workload was deleted (an orphaned pod restarting) leaves its state; {@code cleanup} is for that node.
 *
 * <p>What each deletion does: {@code kubectl delete} (background or foreground), {@code helm uninstall}, a deleted
 * namespace: the pods are stopped after (or while) the workload goes: uninstall. {@code --cascade=orphan}: the pods
 * keep running (no SIGTERM); a workload created again under the name adopts them, and a later SIGTERM sees it
 * present: nothing removed. A rolling update, a drain, a node shutdown, a restart: the workload is present.
 */
public final class OwnerWatch implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(OwnerWatch.class);

  /** What is known of the workload. */
  enum Seen {
    NOT_YET("not seen yet"),
    PRESENT("present"),
    DELETING("being deleted"),
    GONE("deleted");

    private final String text;

    Seen(String text) {
      this.text = text;
    }

    @Override
    public String toString() {
      return text;
    }
  }

  private final Owner owner;
  private final Resource<? extends HasMetadata> resource;
  private final SharedIndexInformer<? extends HasMetadata> informer;
  private final AtomicReference<Seen> latest = new AtomicReference<>(Seen.NOT_YET);
  private final AtomicBoolean seenPresent = new AtomicBoolean();
  private final AtomicBoolean failureLogged = new AtomicBoolean();

  private OwnerWatch(Owner owner, Resource<? extends HasMetadata> resource) {
    this.owner = owner;
    this.resource = resource;
    this.informer = resource.runnableInformer(0);
  }

  /** Starts watching {@code owner}; does not wait for the API (an unreachable one leaves the view "not seen yet"). */
  public static OwnerWatch start(KubernetesClient client, Owner owner) {
    Resource<? extends HasMetadata> resource = switch (owner.kind()) {
      case DAEMONSET -> client.apps().daemonSets().inNamespace(owner.namespace()).withName(owner.name());
      case DEPLOYMENT -> client.apps().deployments().inNamespace(owner.namespace()).withName(owner.name());
    };
    OwnerWatch watch = new OwnerWatch(owner, resource);
    watch.run();
    return watch;
  }

  private <T extends HasMetadata> void run() {
    @SuppressWarnings("unchecked")
    SharedIndexInformer<T> typed = (SharedIndexInformer<T>) informer;
    typed.addEventHandler(new ResourceEventHandler<T>() {
      @Override
      public void onAdd(T obj) {
        saw(of(obj));
      }

      @Override
      public void onUpdate(T oldObj, T newObj) {
        saw(of(newObj));
      }

      @Override
      public void onDelete(T obj, boolean deletedFinalStateUnknown) {
        saw(Seen.GONE);
      }
    });
    typed.exceptionHandler((started, error) -> {
      if (failureLogged.compareAndSet(false, true)) {
        LOG.warn("cannot watch {} (its RBAC: get, list, watch on it): until it can, deleting it does not remove what "
            + "this process owns: {}", owner, error.toString());
      }
      return true;
    });
    typed.start();
    LOG.info("watching {}: deleting it (not a rolling update, a drain or a restart) removes what this process owns "
        + "as it stops", owner);
  }

  private void saw(Seen now) {
    Seen before = latest.getAndSet(now);
    if (now == Seen.PRESENT || now == Seen.DELETING) {
      seenPresent.set(true);
    }
    if (before != now) {
      failureLogged.set(false);
      LOG.info("{}: {}", owner, now);
    }
  }

  private static Seen of(HasMetadata obj) {
    return obj.getMetadata().getDeletionTimestamp() == null ? Seen.PRESENT : Seen.DELETING;
  }

  /** What the watch saw last. */
  Seen latest() {
    return latest.get();
  }

  /** The workload watched. */
  public Owner owner() {
    return owner;
  }

  /**
   * At SIGTERM: a GET of the workload (at most {@code limit}) where the API answers it, else the watch's latest view.
   * Removes only when the workload is gone or being deleted, and was seen present while this process ran.
   */
  public StopVerdict atStop(Duration limit) {
    Seen watched = latest.get();
    Optional<Seen> fetched = fetch(limit);
    fetched.filter(s -> s != Seen.GONE).ifPresent(s -> seenPresent.set(true));
    Seen now = fetched.orElse(watched);
    String source = fetched.isPresent() ? "a GET at SIGTERM" : "the watch (the GET at SIGTERM got no answer)";
    if (now == Seen.PRESENT || now == Seen.NOT_YET) {
      return StopVerdict.keep(owner + " is " + now + " (" + source + "): a restart, a rolling update, a drain or a "
          + "node shutdown; what this process owns stays for its successor");
    }
    if (!seenPresent.get()) {
      return StopVerdict.keep(owner + " is " + now + " (" + source + ") but was never seen present while this "
          + "process ran (a wrong name or namespace, or no RBAC to watch it?): what this process owns stays; "
          + "'egress-service-agent cleanup' removes a node's kernel state (docs/install.md, Uninstall)");
    }
    return StopVerdict.remove(owner + " is " + now + " (" + source + "): uninstalling");
  }

  private Optional<Seen> fetch(Duration limit) {
    CompletableFuture<Seen> get = new CompletableFuture<>();
    Thread t = new Thread(() -> {
      try {
        HasMetadata obj = resource.get();
        get.complete(obj == null ? Seen.GONE : of(obj));
      } catch (RuntimeException e) {
        get.completeExceptionally(e);
      }
    }, "owner-get");
    t.setDaemon(true);
    t.start();
    try {
      return Optional.of(get.get(limit.toMillis(), TimeUnit.MILLISECONDS));
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      String why = cause instanceof KubernetesClientException k && k.getCode() > 0 ? "HTTP " + k.getCode()
          : String.valueOf(cause);
      LOG.info("GET {} at SIGTERM: {}; the watch's view counts", owner, why);
      return Optional.empty();
    } catch (TimeoutException e) {
      LOG.info("GET {} at SIGTERM: no answer within {} ms; the watch's view counts", owner, limit.toMillis());
      return Optional.empty();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Optional.empty();
    }
  }

  @Override
  public void close() {
    informer.close();
  }
}
