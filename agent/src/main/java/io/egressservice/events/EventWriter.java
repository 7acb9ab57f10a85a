package io.egressservice.events;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import io.egressservice.text.Printable;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.EventBuilder;
import io.fabric8.kubernetes.api.model.ObjectReference;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import java.time.Clock;
import java.time.Instant;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Writes core/v1 Events for the node agent and the allocator alike: one reporter ({@code component}, {@code
 * instance}), a message {@linkplain #message escaped and bounded}, a name that cannot collide or outgrow the API's
 * limit, count and times as {@code kubectl} reads them, and a repeat as a merge patch of count, last time and
 * message. What is written when, how often and how repeats are found is the callers' (the agent's Events recorder,
 * the allocator); failures are thrown, for them to retry, count or log.
 */
public final class EventWriter {
  /** The longest message written: longer ones are cut, and end in "...". */
  public static final int MAX_MESSAGE = 1024;
  /** The longest name prefix taken from the object's name (an Event's name is a DNS subdomain, at most 253). */
  static final int MAX_NAME_BASE = 200;

  private final KubernetesClient client;
  private final String component;
  private final String instance;
  private final String sourceHost;
  private final Map<String, String> labels;
  private final Clock clock;

  /**
   * @param instance the reporting instance: the node, or the allocator replica
   * @param sourceHost the source's host (the node), or null for none
   * @param labels put on every Event written (e.g. to list one's own back)
   */
  public EventWriter(KubernetesClient client, String component, String instance, String sourceHost,
      Map<String, String> labels, Clock clock) {
    this.client = Objects.requireNonNull(client);
    this.component = Objects.requireNonNull(component);
    this.instance = Objects.requireNonNull(instance);
    this.sourceHost = sourceHost;
    this.labels = Map.copyOf(labels);
    this.clock = Objects.requireNonNull(clock);
  }

  /** An Event as written: its name and time. */
  public record Created(String name, Instant at) {}

  /**
   * Writes a new Event (count 1) on {@code about}, in its namespace.
   *
   * @param type "Normal" or "Warning"
   * @param reason CamelCase, e.g. {@code EgressConfigured}
   */
  public Created create(ObjectReference about, String type, String reason, String message) {
    Instant now = clock.instant().truncatedTo(ChronoUnit.SECONDS);
    String ts = DateTimeFormatter.ISO_INSTANT.format(now);
    String name = name(about.getName());
    Event event = new EventBuilder()
        .withNewMetadata().withName(name).withNamespace(about.getNamespace())
            .withLabels(labels.isEmpty() ? null : labels).endMetadata()
        .withInvolvedObject(about)
        .withType(type)
        .withReason(reason)
        .withMessage(message(message))
        .withNewSource().withComponent(component).withHost(sourceHost).endSource()
        .withReportingComponent(component)
        .withReportingInstance(instance)
        .withFirstTimestamp(ts)
        .withLastTimestamp(ts)
        .withCount(1)
        .build();
    client.v1().events().inNamespace(about.getNamespace()).resource(event).create();
    return new Created(name, now);
  }

  /**
   * One more occurrence of the Event {@code name}: its count becomes {@code count}, its last time now, its message
   * {@code message}. False when that Event is gone (expired: the API server's --event-ttl).
   */
  public boolean repeat(String namespace, String name, int count, String message) {
    String ts = DateTimeFormatter.ISO_INSTANT.format(clock.instant().truncatedTo(ChronoUnit.SECONDS));
    var patch = JsonNodeFactory.instance.objectNode()
        .put("count", count).put("lastTimestamp", ts).put("message", message(message));
    try {
      client.v1().events().inNamespace(namespace).withName(name)
          .patch(PatchContext.of(PatchType.JSON_MERGE), patch.toString());
      return true;
    } catch (KubernetesClientException e) {
      if (e.getCode() == 404) {
        return false;
      }
      throw e;
    }
  }

  /** The object's name (its first {@value #MAX_NAME_BASE} characters), then the time and a random part. */
  private String name(String objectName) {
    // cut, a DNS subdomain may end in '-' or '.', which the name may not have before its own '.'
    String base = objectName.length() > MAX_NAME_BASE
        ? objectName.substring(0, MAX_NAME_BASE).replaceAll("[-.]+$", "") : objectName;
    return base + "." + Long.toHexString(clock.millis())
        + String.format("%08x", ThreadLocalRandom.current().nextInt());
  }

  /**
   * What an Event says, as it is written: {@linkplain Printable#escape escaped}, since messages carry names, networks
   * and reasons others wrote, and {@code kubectl describe}, {@code get events} and log pipelines print them to people
   * as they are; then bounded to {@value #MAX_MESSAGE} characters. Callers pass the text unescaped.
   */
  public static String message(String message) {
    String escaped = Printable.escape(message);
    return escaped.length() > MAX_MESSAGE ? escaped.substring(0, MAX_MESSAGE - 3) + "..." : escaped;
  }
}
