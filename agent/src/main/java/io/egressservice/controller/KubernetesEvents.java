package io.egressservice.controller;

import io.egressservice.events.EventWriter;
import io.egressservice.model.ObjectRef;
import io.egressservice.text.Printable;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.EventList;
import io.fabric8.kubernetes.api.model.ListOptionsBuilder;
import io.fabric8.kubernetes.api.model.ObjectReferenceBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * core/v1 Events on the EgressService, reported by this node. Each carries the label {@value #NODE_LABEL}
 * (the node's name, or a hash of a name too long for a label value), so that a restarted agent lists
 * only its own node's Events to go on from them; a repeat is a merge patch of count, last time and
 * message (needs {@code list} and {@code patch} on events, besides {@code create}). {@link EventWriter} writes them.
 */
public final class KubernetesEvents implements EventSink {
  private static final Logger LOG = LoggerFactory.getLogger(KubernetesEvents.class);
  static final String COMPONENT = "egress-service-agent";
  static final String NODE_LABEL = "egress-service-agent/node";
  private static final String KIND = "EgressService";

  private final KubernetesClient client;
  private final String node;
  private final String nodeLabel;
  private final EventWriter writer;

  public KubernetesEvents(KubernetesClient client, String node, Clock clock) {
    this.client = client;
    this.node = node;
    this.nodeLabel = labelValue(node);
    this.writer = new EventWriter(client, COMPONENT, node, node, Map.of(NODE_LABEL, nodeLabel), clock);
  }

  /** The node name when it is a valid label value, else a stable hash of it. */
  static String labelValue(String node) {
    if (node.length() <= 63 && node.matches("([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?")) {
      return node;
    }
    try {
      byte[] d = MessageDigest.getInstance("SHA-256").digest(node.getBytes(StandardCharsets.UTF_8));
      return "h-" + HexFormat.of().formatHex(d, 0, 20);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  public void emit(ObjectRef es, String type, String reason, String message) {
    create(new EventRecord(es, type, reason, message));
  }

  /** Failures are thrown, for the caller to retry or count. */
  @Override
  public Written create(EventRecord e) {
    ObjectRef es = e.object();
    EventWriter.Created created = writer.create(new ObjectReferenceBuilder().withApiVersion("k8s.ovn.org/v1")
        .withKind(KIND).withNamespace(es.namespace()).withName(es.name()).build(), e.type(), e.reason(), e.message());
    return new Written(e, created.name(), 1, created.at());
  }

  @Override
  public boolean repeat(Written earlier, EventRecord e, int count) {
    return writer.repeat(e.object().namespace(), earlier.name(), count, e.message());
  }

  /**
   * This node's Events on EgressServices, oldest first. Without permission to list Events (an older
   * RBAC), none: outcomes are then reported once more after a restart, as before.
   */
  @Override
  public List<Written> written() {
    List<Written> out = new ArrayList<>();
    String next = null;
    try {
      do {
        EventList page = client.v1().events().inAnyNamespace().withLabel(NODE_LABEL, nodeLabel)
            .list(new ListOptionsBuilder().withLimit(500L).withContinue(next).build());
        for (Event ev : page.getItems()) {
          written(ev).ifPresent(out::add);
        }
        next = page.getMetadata() == null ? null : page.getMetadata().getContinue();
      } while (next != null && !next.isEmpty());
    } catch (KubernetesClientException e) {
      if (e.getCode() == 403) {
        LOG.warn("cannot list this node's earlier Events ({}): outcomes already reported before this start are"
            + " reported again; grant 'list' on events to the agent (deploy/rbac.yaml)", e.getMessage());
        return List.of();
      }
      throw e;
    }
    out.sort(java.util.Comparator.comparing(Written::last).thenComparing(Written::name));
    return out;
  }

  private Optional<Written> written(Event ev) {
    var io = ev.getInvolvedObject();
    if (io == null || !KIND.equals(io.getKind()) || !node.equals(ev.getReportingInstance())
        || ev.getReason() == null || ev.getMessage() == null || ev.getMetadata() == null) {
      return Optional.empty();
    }
    Instant last = Optional.ofNullable(ev.getLastTimestamp())
        .or(() -> Optional.ofNullable(ev.getFirstTimestamp()))
        .or(() -> Optional.ofNullable(ev.getMetadata().getCreationTimestamp()))
        .map(KubernetesEvents::instant).orElse(Instant.EPOCH);
    // unescaped: compared with what the reporter would say now, which is the message before it was written
    EventRecord record = new EventRecord(new ObjectRef(io.getNamespace(), io.getName()),
        Optional.ofNullable(ev.getType()).orElse("Normal"), ev.getReason(), Printable.unescape(ev.getMessage()));
    return Optional.of(new Written(record, ev.getMetadata().getName(), Optional.ofNullable(ev.getCount()).orElse(1), last));
  }

  private static Instant instant(String ts) {
    try {
      return Instant.parse(ts);
    } catch (RuntimeException e) {
      return Instant.EPOCH;
    }
  }
}
