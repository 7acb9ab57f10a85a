package io.egressservice.uninstall;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.egressservice.allocator.LabelNames;
import io.egressservice.plan.EgressServiceInfo;
import io.fabric8.kubernetes.api.model.KubernetesResourceList;
import io.fabric8.kubernetes.api.model.ListOptions;
import io.fabric8.kubernetes.api.model.ListOptionsBuilder;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeList;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceStatus;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the allocator wrote to the API and nothing else, removed when it is uninstalled: every Node label
 * {@code egress-service.k8s.ovn.org/*} (the host labels; whichever EgressService they were for, a deleted one's
 * too), every EgressService's also-receive annotation, and {@code status.host} (written back empty, OVN-Kubernetes'
 * "not allocated", as its cluster manager writes it when it stops serving a service). Idempotent: any replica may
 * run it, more than one at once, and again; only keys and fields that are still set are written. Each object is
 * changed alone (JSON merge patches of the keys, a status PUT with conflict retries), so nobody else's labels,
 * annotations or spec are touched. Label keys and names go into log lines raw: the log encoders escape them.
 */
public final class AllocatorLeftovers {
  private static final Logger LOG = LoggerFactory.getLogger(AllocatorLeftovers.class);
  private static final long PAGE = 500;
  private static final int WRITERS = 4;
  private static final int STATUS_ATTEMPTS = 5;

  /** What was removed, and what could not be (each with its reason). */
  public record Removed(int labels, int annotations, int hosts, List<String> failures) {
    public Removed {
      failures = List.copyOf(failures);
    }

    @Override
    public String toString() {
      return labels + " node label(s), " + annotations + " also-receive annotation(s), " + hosts + " status.host(s)"
          + (failures.isEmpty() ? "" : "; not removed: " + String.join("; ", failures));
    }
  }

  private final KubernetesClient client;
  private final AtomicInteger labels = new AtomicInteger();
  private final AtomicInteger annotations = new AtomicInteger();
  private final AtomicInteger hosts = new AtomicInteger();
  private final List<String> failures = new ArrayList<>();

  private AllocatorLeftovers(KubernetesClient client) {
    this.client = Objects.requireNonNull(client);
  }

  /** Removes them all, in at most {@code budget} (what is left then is a failure). */
  public static Removed remove(KubernetesClient client, Duration budget) {
    return new AllocatorLeftovers(client).run(budget);
  }

  private Removed run(Duration budget) {
    ExecutorService writers = Executors.newFixedThreadPool(WRITERS, r -> {
      Thread t = new Thread(r, "uninstall-writer");
      t.setDaemon(true);
      return t;
    });
    List<Future<?>> writes = new ArrayList<>();
    long deadline = System.nanoTime() + budget.toNanos();
    try {
      pages(options -> client.nodes().list(options), NodeList::getItems, NodeList::getMetadata, node -> {
        List<String> keys = node.getMetadata().getLabels() == null ? List.of()
            : node.getMetadata().getLabels().entrySet().stream()
                .filter(e -> e.getValue() != null && LabelNames.isHostLabel(e.getKey()))
                .map(Map.Entry::getKey).toList();
        if (!keys.isEmpty()) {
          writes.add(writers.submit(() -> unlabel(node.getMetadata().getName(), keys)));
        }
      });
      pages(options -> client.resources(EgressService.class).inAnyNamespace().list(options),
          KubernetesResourceList<EgressService>::getItems, KubernetesResourceList<EgressService>::getMetadata, es -> {
            Map<String, String> a = es.getMetadata().getAnnotations();
            if (a != null && a.get(EgressServiceInfo.ALSO_RECEIVE_ANNOTATION) != null) {
              writes.add(writers.submit(() -> unannotate(es)));
            }
            if (es.getStatus() != null && es.getStatus().getHost() != null && !es.getStatus().getHost().isEmpty()) {
              writes.add(writers.submit(() -> clearHost(es)));
            }
          });
      for (Future<?> w : writes) {
        w.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      }
    } catch (java.util.concurrent.TimeoutException e) {
      failed("not finished within " + budget.toMillis() + " ms");
    } catch (java.util.concurrent.ExecutionException e) {
      failed(String.valueOf(e.getCause()));
    } catch (KubernetesClientException e) {
      failed("list: " + describe(e));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      failed("interrupted");
    } finally {
      writers.shutdownNow();
    }
    synchronized (failures) {
      return new Removed(labels.get(), annotations.get(), hosts.get(), failures);
    }
  }

  private interface Lister<L> {
    L list(ListOptions options);
  }

  private static <L, T> void pages(Lister<L> lister, java.util.function.Function<L, List<T>> items,
      java.util.function.Function<L, io.fabric8.kubernetes.api.model.ListMeta> meta, Consumer<T> each) {
    String next = null;
    do {
      L page = lister.list(new ListOptionsBuilder().withLimit(PAGE).withContinue(next).build());
      items.apply(page).forEach(each);
      next = meta.apply(page) == null ? null : meta.apply(page).getContinue();
    } while (next != null && !next.isEmpty());
  }

  private void unlabel(String node, List<String> keys) {
    ObjectNode root = JsonNodeFactory.instance.objectNode();
    ObjectNode set = root.putObject("metadata").putObject("labels");
    keys.forEach(set::putNull);
    try {
      client.nodes().withName(node).patch(PatchContext.of(PatchType.JSON_MERGE), root.toString());
      labels.addAndGet(keys.size());
      LOG.info("uninstall: node {}: removed labels {}", node, keys);
    } catch (KubernetesClientException e) {
      if (e.getCode() != 404) {
        failed("node " + node + " labels " + keys + ": " + describe(e));
      }
    }
  }

  private void unannotate(EgressService es) {
    ObjectNode root = JsonNodeFactory.instance.objectNode();
    root.putObject("metadata").putObject("annotations").putNull(EgressServiceInfo.ALSO_RECEIVE_ANNOTATION);
    String ns = es.getMetadata().getNamespace();
    String name = es.getMetadata().getName();
    try {
      client.resources(EgressService.class).inNamespace(ns).withName(name)
          .patch(PatchContext.of(PatchType.JSON_MERGE), root.toString());
      annotations.incrementAndGet();
    } catch (KubernetesClientException e) {
      if (e.getCode() != 404) {
        failed(EgressServiceInfo.ALSO_RECEIVE_ANNOTATION + " of " + ns + "/" + name + ": " + describe(e));
      }
    }
  }

  private void clearHost(EgressService listed) {
    String ns = listed.getMetadata().getNamespace();
    String name = listed.getMetadata().getName();
    EgressService copy = listed;
    for (int attempt = 1; ; attempt++) {
      EgressServiceStatus status = new EgressServiceStatus();
      status.setHost("");
      copy.setStatus(status);
      try {
        client.resource(copy).updateStatus();
        hosts.incrementAndGet();
        return;
      } catch (KubernetesClientException e) {
        if (e.getCode() == 404) {
          return;
        }
        if (e.getCode() != 409 || attempt == STATUS_ATTEMPTS) {
          failed("status.host of " + ns + "/" + name + ": " + describe(e));
          return;
        }
        copy = client.resources(EgressService.class).inNamespace(ns).withName(name).get();
        if (copy == null || copy.getStatus() == null || copy.getStatus().getHost() == null
            || copy.getStatus().getHost().isEmpty()) {
          return;
        }
      }
    }
  }

  private static String describe(KubernetesClientException e) {
    return e.getCode() == 403 ? "forbidden (HTTP 403: its RBAC was deleted first?)"
        : e.getCode() > 0 ? "HTTP " + e.getCode() + ": " + e.getMessage() : e.getMessage();
  }

  private void failed(String what) {
    synchronized (failures) {
      failures.add(what);
    }
  }
}
