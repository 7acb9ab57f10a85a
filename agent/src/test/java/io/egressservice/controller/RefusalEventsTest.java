package io.egressservice.controller;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.ip.IpPrefix;
import io.egressservice.plan.EgressServiceInfo;
import io.egressservice.plan.EndpointSliceInfo;
import io.egressservice.plan.NetworkResolution;
import io.egressservice.plan.NodeInfo;
import io.egressservice.plan.NodeInputs;
import io.egressservice.model.ObjectRef;
import io.egressservice.model.PlanConfig;
import io.egressservice.plan.Planner;
import io.egressservice.plan.ServiceInfo;
import io.egressservice.plan.SourceIpBy;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * A refused LB IP or reserved network is told to the user as a Warning Event by the
 * host node (once, while it lasts), not only in the plan's reason.
 */
class RefusalEventsTest {
  static final String NODE = "node-a";

  record Emitted(String name, String type, String reason, String message) {}

  static List<Emitted> eventsFor(String lbIp, String network) {
    ObjectRef web = new ObjectRef("default", "web");
    NodeInputs in = new NodeInputs(NODE,
        List.of(new EgressServiceInfo(web, Optional.empty(), SourceIpBy.LOAD_BALANCER_IP, network, NODE)),
        List.of(new ServiceInfo(web, "LoadBalancer", List.of("172.30.0.10"), List.of(new ServiceInfo.Ingress(lbIp, "")))),
        List.of(new EndpointSliceInfo(new ObjectRef("default", "web-1"), "web", "IPv4",
            List.of(new EndpointSliceInfo.Endpoint(List.of("10.128.0.5"), Optional.of(NODE))))),
        List.of(new NodeInfo(NODE, List.of("192.168.1.10"), List.of("10.128.0.0/24"))),
        List.of(), NetworkResolution.offlineResolution(),
        PlanConfig.defaults().withCidrs(List.of(), List.of(IpPrefix.parse("172.30.0.0/16")), List.of()));
    List<Emitted> out = new ArrayList<>();
    OutcomeReporter reporter = new OutcomeReporter((es, type, reason, message) ->
        out.add(new Emitted(es.name(), type, reason, message)), NODE);
    reporter.report(Planner.plan(in));
    reporter.report(Planner.plan(in)); // a resync: nothing new
    return out;
  }

  @Test
  void aRefusedLbIpIsAWarningEventOnTheHost() {
    assertThat(eventsFor("127.0.0.1", "")).singleElement().satisfies(e -> {
      assertThat(e.type()).isEqualTo("Warning");
      assertThat(e.reason()).isEqualTo("LoadBalancerIPRefused");
      assertThat(e.message()).isEqualTo("on node node-a: LoadBalancer ingress IP 127.0.0.1 is a loopback address:"
          + " not an egress source");
    });
  }

  @Test
  void anInvalidLbIpIsNamedAsInvalidNotAsMissing() {
    assertThat(eventsFor("5.5.5.500", "")).singleElement().satisfies(e -> {
      assertThat(e.type()).isEqualTo("Warning");
      assertThat(e.reason()).isEqualTo("LoadBalancerIPRefused");
      assertThat(e.message()).isEqualTo("on node node-a: LoadBalancer ingress IP '5.5.5.500' is not a valid IP address:"
          + " not an egress source");
    });
  }

  @Test
  void aReservedNetworkIsAWarningEventOnTheHost() {
    assertThat(eventsFor("5.5.5.5", "main")).singleElement().satisfies(e -> {
      assertThat(e.type()).isEqualTo("Warning");
      assertThat(e.reason()).isEqualTo("NetworkNotFound");
      assertThat(e.message()).contains("network 'main' is the kernel's 'main' table (254), not an egress network");
    });
  }

  @Test
  void aRefusalIsAlsoAWarnLineKeyedByNamespaceServiceAndNode() {
    Logger logger = (Logger) LoggerFactory.getLogger(NodeAgent.class);
    ListAppender<ILoggingEvent> lines = new ListAppender<>();
    lines.start();
    logger.addAppender(lines);
    try {
      eventsFor("127.0.0.1", "");
    } finally {
      logger.detachAppender(lines);
    }

    assertThat(lines.list).singleElement().satisfies(line -> {
      assertThat(line.getLevel()).hasToString("WARN");
      assertThat(line.getFormattedMessage()).isEqualTo("LoadBalancerIPRefused default/web: on node node-a:"
          + " LoadBalancer ingress IP 127.0.0.1 is a loopback address: not an egress source");
      Map<String, Object> keys = line.getKeyValuePairs().stream().collect(Collectors.toMap(kv -> kv.key, kv -> kv.value));
      assertThat(keys).containsExactlyInAnyOrderEntriesOf(
          Map.of("namespace", "default", "service", "web", "node", NODE));
    });
  }
}
