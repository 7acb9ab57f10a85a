package io.egressservice.allocator;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.egressservice.events.EventWriter;
import io.egressservice.objects.PlanInputs;
import io.fabric8.kubernetes.api.model.ObjectReferenceBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import java.time.Clock;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceStatus;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the allocator writes to the API, and only while it may ({@code mayWrite}: leading, not closed; checked before
 * every write): {@code status.host} through the status subresource (with conflict retries), node labels by JSON
 * merge patch of {@code metadata.labels}, and core/v1 Events on an EgressService ({@link EventWriter}). Counts what it
 * wrote.
 */
final class AllocatorWrites {
  /** The allocator's logger: operators filter on it, whichever part of the allocator speaks. */
  private static final Logger LOG = LoggerFactory.getLogger(Allocator.class);
  private static final int STATUS_ATTEMPTS = 5;

  private final KubernetesClient client;
  private final String identity;
  private final EventWriter eventWriter;
  private final BooleanSupplier mayWrite;
  private final AtomicLong statusWrites = new AtomicLong();
  private final AtomicLong labelPatches = new AtomicLong();
  private final AtomicLong eventsWritten = new AtomicLong();
  private final AtomicLong statusConflicts = new AtomicLong();

  /** Leadership was lost during a pass: what it decided is left unwritten. */
  static final class NotLeadingException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    NotLeadingException() {
      super("not the leader", null, false, false);
    }
  }

  AllocatorWrites(KubernetesClient client, String identity, BooleanSupplier mayWrite) {
    this.client = client;
    this.identity = identity;
    this.eventWriter = new EventWriter(client, Allocator.COMPONENT, identity, null, Map.of(), Clock.systemUTC());
    this.mayWrite = mayWrite;
  }

  long statusWrites() {
    return statusWrites.get();
  }

  long labelPatches() {
    return labelPatches.get();
  }

  long statusConflicts() {
    return statusConflicts.get();
  }

  long eventsWritten() {
    return eventsWritten.get();
  }

  private void ensureLeading() {
    if (!mayWrite.getAsBoolean()) {
      throw new NotLeadingException();
    }
  }

  /** True when this call wrote {@code host}; false when the object is gone or already had it. */
  boolean writeStatus(EgressService cached, String host) {
    EgressService copy = client.getKubernetesSerialization().clone(cached);
    String ns = cached.getMetadata().getNamespace();
    String name = cached.getMetadata().getName();
    for (int attempt = 1; ; attempt++) {
      ensureLeading();
      EgressServiceStatus status = new EgressServiceStatus();
      status.setHost(host);
      copy.setStatus(status);
      try {
        client.resource(copy).updateStatus();
        statusWrites.incrementAndGet();
        return true;
      } catch (KubernetesClientException e) {
        if (e.getCode() == 404) {
          return false; // deleted meanwhile; its informer event requests a new pass
        }
        if (e.getCode() != 409 || attempt == STATUS_ATTEMPTS) {
          throw e;
        }
        statusConflicts.incrementAndGet();
        LOG.debug("{}: conflict writing status of {}/{}, retrying", identity, ns, name);
        copy = client.resources(EgressService.class).inNamespace(ns).withName(name).get();
        if (copy == null) {
          return false;
        }
        if (copy.getStatus() != null && host.equals(copy.getStatus().getHost())) {
          return false;
        }
      }
    }
  }

  void patchLabels(String node, Map<String, Boolean> changes) {
    ensureLeading();
    ObjectNode root = JsonNodeFactory.instance.objectNode();
    ObjectNode labels = root.putObject("metadata").putObject("labels");
    changes.forEach((key, set) -> {
      if (set) {
        labels.put(key, "");
      } else {
        labels.putNull(key);
      }
    });
    try {
      client.nodes().withName(node).patch(PatchContext.of(PatchType.JSON_MERGE), root.toString());
      labelPatches.incrementAndGet();
      LOG.info("{}: node {} labels {}", identity, node, changes);
    } catch (KubernetesClientException e) {
      if (e.getCode() != 404) {
        throw e;
      }
    }
  }

  void event(EgressService es, String type, String reason, String message) {
    if (!mayWrite.getAsBoolean()) {
      return;
    }
    try {
      eventWriter.create(new ObjectReferenceBuilder()
          .withApiVersion(es.getApiVersion())
          .withKind(es.getKind())
          .withNamespace(es.getMetadata().getNamespace())
          .withName(es.getMetadata().getName())
          .withUid(es.getMetadata().getUid())
          .withResourceVersion(es.getMetadata().getResourceVersion())
          .build(), type, reason, message);
      eventsWritten.incrementAndGet();
    } catch (KubernetesClientException e) {
      LOG.warn("{}: could not write Event {} for {}: {}", identity, reason, PlanInputs.ref(es), e.getMessage());
    }
  }
}
