package io.egressservice.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServiceBuilder;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointBuilder;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSliceBuilder;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import io.fabric8.mockwebserver.http.Dispatcher;
import io.fabric8.mockwebserver.http.MockResponse;
import io.fabric8.mockwebserver.http.RecordedRequest;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The CRUD mock API server, plus Services and EndpointSlices that no EgressService names ("bystanders"):
 * they are added to every cluster-wide list of Services and of EndpointSlices (what an informer's list and
 * relist read), and exist nowhere else. The CRUD mock's create is linear in what it holds, so creating
 * 10,000 of each one by one would take many minutes; for what the agent caches and costs, being in its lists
 * is what matters.
 */
final class BystanderDispatcher extends Dispatcher {
  static final String NAMESPACE = "bystanders";
  private static final ObjectMapper JSON = new ObjectMapper();

  private final Dispatcher crud;
  private final ArrayNode services;
  private final ArrayNode slices;

  BystanderDispatcher(Dispatcher crud, int count) {
    this.crud = crud;
    KubernetesSerialization serialization = new KubernetesSerialization();
    List<Service> s = new ArrayList<>(count);
    List<EndpointSlice> e = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      s.add(service(i));
      e.add(slice(i));
    }
    services = (ArrayNode) read(serialization.asJson(s));
    slices = (ArrayNode) read(serialization.asJson(e));
  }

  private static JsonNode read(String json) {
    try {
      return JSON.readTree(json);
    } catch (java.io.IOException ex) {
      throw new IllegalStateException(ex);
    }
  }

  static String name(int i) {
    return String.format(Locale.ROOT, "other-%05d", i);
  }

  /** A ClusterIP Service as a cluster holds it (labels, a selector, two ports). */
  static Service service(int i) {
    return new ServiceBuilder()
        .withNewMetadata().withName(name(i)).withNamespace(NAMESPACE).withUid("00000000-0000-4000-8000-" + String.format(Locale.ROOT, "%012d", i))
          .withResourceVersion(Integer.toString(1_000_000 + i)).withCreationTimestamp("2026-01-01T00:00:00Z")
          .withLabels(Map.of("app", name(i), "team", "t" + (i % 20)))
          .withAnnotations(Map.of("kubectl.kubernetes.io/last-applied-configuration", "{\"apiVersion\":\"v1\",\"kind\":\"Service\"}"))
        .endMetadata()
        .withNewSpec().withType("ClusterIP").withClusterIP(address(172, 20, i)).withClusterIPs(address(172, 20, i))
          .withSelector(Map.of("app", name(i)))
          .addNewPort().withName("http").withPort(80).withProtocol("TCP").endPort()
          .addNewPort().withName("metrics").withPort(9090).withProtocol("TCP").endPort()
        .endSpec()
        .build();
  }

  /** Its EndpointSlice: five ready endpoints on five nodes, with pod references. */
  static EndpointSlice slice(int i) {
    EndpointSliceBuilder b = new EndpointSliceBuilder()
        .withNewMetadata().withName(name(i) + "-abcde").withNamespace(NAMESPACE)
          .withResourceVersion(Integer.toString(2_000_000 + i)).withCreationTimestamp("2026-01-01T00:00:00Z")
          .withLabels(Map.of("kubernetes.io/service-name", name(i),
              "endpointslice.kubernetes.io/managed-by", "endpointslice-controller.k8s.io", "app", name(i)))
        .endMetadata()
        .withAddressType("IPv4")
        .addNewPort().withName("http").withPort(8080).withProtocol("TCP").endPort();
    for (int j = 0; j < 5; j++) {
      b.addToEndpoints(new EndpointBuilder().withAddresses(address(10, 64 + j, i)).withNodeName("worker-" + j)
          .withNewConditions().withReady(true).withServing(true).withTerminating(false).endConditions()
          .withNewTargetRef().withKind("Pod").withNamespace(NAMESPACE).withName(name(i) + "-pod-" + j).endTargetRef()
          .build());
    }
    return b.build();
  }

  private static String address(int a, int b, int i) {
    return a + "." + b + "." + (i >> 8 & 255) + "." + (i & 255);
  }

  @Override
  public MockResponse dispatch(RecordedRequest request) {
    MockResponse response = crud.dispatch(request);
    String path = request.getPath();
    if (!"GET".equals(request.getMethod()) || path.contains("watch=true") || response.code() != 200) {
      return response;
    }
    ArrayNode extra = path.startsWith("/api/v1/services") ? services
        : path.startsWith("/apis/discovery.k8s.io/v1/endpointslices") ? slices : null;
    if (extra == null) {
      return response;
    }
    ObjectNode list = (ObjectNode) read(response.getBody().readUtf8());
    ArrayNode items = list.withArray("items");
    items.addAll(extra);
    return response.setBody(list.toString());
  }
}
