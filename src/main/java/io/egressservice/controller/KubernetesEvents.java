package io.egressservice.controller;

import io.egressservice.plan.ObjectRef;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.EventBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.time.Clock;
import java.time.format.DateTimeFormatter;
import java.util.concurrent.ThreadLocalRandom;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Writes core/v1 Events on the EgressService, reported by this node. Failures are logged, never thrown. */
public final class KubernetesEvents implements EventSink {
  private static final Logger LOG = LoggerFactory.getLogger(KubernetesEvents.class);
  static final String COMPONENT = "egress-service-agent";

  private final KubernetesClient client;
  private final String node;
  private final Clock clock;

  public KubernetesEvents(KubernetesClient client, String node, Clock clock) {
    this.client = client;
    this.node = node;
    this.clock = clock;
  }

  @Override
  public void emit(ObjectRef es, String type, String reason, String message) {
    String now = DateTimeFormatter.ISO_INSTANT.format(clock.instant().truncatedTo(java.time.temporal.ChronoUnit.SECONDS));
    String name = es.name() + "." + Long.toHexString(clock.millis()) + Integer.toHexString(ThreadLocalRandom.current().nextInt(1 << 16));
    Event event = new EventBuilder()
        .withNewMetadata().withName(name).withNamespace(es.namespace()).endMetadata()
        .withNewInvolvedObject()
          .withApiVersion("k8s.ovn.org/v1").withKind("EgressService")
          .withNamespace(es.namespace()).withName(es.name())
        .endInvolvedObject()
        .withType(type)
        .withReason(reason)
        .withMessage(message.length() > 1000 ? message.substring(0, 997) + "..." : message)
        .withNewSource().withComponent(COMPONENT).withHost(node).endSource()
        .withReportingComponent(COMPONENT)
        .withReportingInstance(node)
        .withFirstTimestamp(now)
        .withLastTimestamp(now)
        .withCount(1)
        .build();
    try {
      client.v1().events().inNamespace(es.namespace()).resource(event).create();
    } catch (RuntimeException e) {
      LOG.warn("could not write Event {} on EgressService {}: {}", reason, es, e.getMessage());
    }
  }
}
