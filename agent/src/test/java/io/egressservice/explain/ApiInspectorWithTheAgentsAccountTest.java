package io.egressservice.explain;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.ip.IpPrefix;
import io.egressservice.objects.EgressServices;
import io.fabric8.kubernetes.api.model.ServiceBuilder;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSliceBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import io.fabric8.mockwebserver.http.Dispatcher;
import io.fabric8.mockwebserver.http.MockResponse;
import io.fabric8.mockwebserver.http.RecordedRequest;
import java.util.HashMap;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.ovn.k8s.v1.EgressServiceSpec.SourceIPBy;

/**
 * {@code explain} in the agent's pod reads the API with the agent's account, which may not read pods nor get an
 * EgressService (deploy/rbac.yaml): the pod is then the one the EndpointSlices name, and the claim still complete.
 */
class ApiInspectorWithTheAgentsAccountTest {
  KubernetesMockServer server;
  KubernetesClient client;

  @BeforeEach
  void start() {
    KubernetesCrudDispatcher crud = new KubernetesCrudDispatcher();
    server = new KubernetesMockServer(new Context(), new MockWebServer(), new HashMap<>(), new Dispatcher() {
      @Override
      public MockResponse dispatch(RecordedRequest request) {
        String path = request.getPath().split("\\?", 2)[0];
        boolean pods = path.matches("/api/v1/(namespaces/[^/]+/)?pods(/.*)?");
        boolean getOneEgressService = path.matches("/apis/k8s.ovn.org/v1/namespaces/[^/]+/egressservices/[^/]+");
        if ((pods || getOneEgressService) && request.getMethod().equals("GET")) {
          return new MockResponse().setResponseCode(403).setBody("{\"kind\":\"Status\",\"apiVersion\":\"v1\","
              + "\"status\":\"Failure\",\"reason\":\"Forbidden\",\"code\":403,\"message\":\"forbidden\"}");
        }
        return crud.dispatch(request);
      }
    }, false);
    server.init();
    client = server.createClient();
    client.services().resource(new ServiceBuilder().withNewMetadata().withName("web").withNamespace("shop").endMetadata()
        .withNewSpec().withType("LoadBalancer").endSpec()
        .withNewStatus().withNewLoadBalancer().addNewIngress().withIp("5.5.5.5").endIngress().endLoadBalancer()
        .endStatus().build()).create();
    client.discovery().v1().endpointSlices().resource(new EndpointSliceBuilder().withNewMetadata().withName("web-abc")
        .withNamespace("shop").addToLabels("kubernetes.io/service-name", "web").endMetadata().withAddressType("IPv4")
        .addNewEndpoint().withAddresses("10.128.1.7").withNodeName("node-b")
        .withNewTargetRef().withKind("Pod").withName("web-5d9").withNamespace("shop").endTargetRef().endEndpoint()
        .build()).create();
    client.resource(EgressServices.of("shop", "web", SourceIPBy.LOADBALANCERIP, "100", "node-a")).create();
  }

  @AfterEach
  void stop() {
    client.close();
    server.destroy();
  }

  @Test
  void withoutReadingPodsThePodAndItsNodeComeFromTheEndpointSlice() {
    ApiInspector api = new ApiInspector(client);
    ApiClaims claims = api.claims(IpPrefix.parseHost("10.128.1.7"));
    assertThat(claims.pod()).contains("shop/web-5d9");
    assertThat(claims.podNode()).contains("node-b");
    ApiClaims.Claim claim = claims.egressClaim().orElseThrow();
    assertThat(claim.service()).isEqualTo("shop/web");
    assertThat(claim.host()).isEqualTo(Optional.of("node-a"));
    assertThat(claim.network()).contains("100");
    assertThat(ApiInspector.addresses(api.pod("shop", "web-5d9"))).isEqualTo(List.of("10.128.1.7"));
  }

  private void event(String name, String egressService, String reason, String reporter, String time) {
    client.v1().events().inNamespace("shop").resource(new io.fabric8.kubernetes.api.model.EventBuilder()
        .withNewMetadata().withName(name).withNamespace("shop").endMetadata()
        .withNewInvolvedObject().withApiVersion("k8s.ovn.org/v1").withKind("EgressService").withNamespace("shop")
        .withName(egressService).endInvolvedObject()
        .withType(reason.equals("ServiceNotFound") ? "Warning" : "Normal").withReason(reason)
        .withMessage(reason + " said by " + reporter).withReportingInstance(reporter)
        .withFirstTimestamp(time).withLastTimestamp(time).withCount(1).build()).create();
  }

  @Test
  void theLastChangeOfAnEgressServiceIsItsNewestEventWhoeverWroteIt() {
    event("web.1", "web", "HostAllocated", "egress-service-allocator", "2026-01-01T10:00:00Z");
    event("web.2", "web", "EgressConfigured", "node-a", "2026-01-01T10:00:05Z");
    // newer, but the Service is there: of a time before it, as explain treats it
    event("web.3", "web", "ServiceNotFound", "egress-service-allocator", "2026-01-01T10:00:09Z");
    event("other.1", "other", "HostAllocated", "egress-service-allocator", "2026-01-01T11:00:00Z");

    ApiInspector api = new ApiInspector(client);
    var changes = api.lastChanges(api.objects());

    assertThat(changes).containsOnlyKeys("shop/web");
    assertThat(changes.get("shop/web")).isEqualTo(new ApiClaims.Reason("Normal", "EgressConfigured",
        "EgressConfigured said by node-a", "node-a", "2026-01-01T10:00:05Z"));
  }

    @Test
  void aPodNoSliceNamesIsAnErrorThatSaysToGiveItsAddress() {
    ApiInspector api = new ApiInspector(client);
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> api.pod("shop", "batch-1"))
        .isInstanceOf(ExplainException.class).hasMessageContaining("give its address instead");
  }
}
