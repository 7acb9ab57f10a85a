package io.egressservice.controller;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.egressservice.informers.ClusterInformers;
import io.egressservice.informers.EgressServiceDecoding;
import io.fabric8.kubernetes.api.model.KubernetesResource;
import io.fabric8.kubernetes.api.model.Status;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.util.List;
import java.util.stream.Stream;

/**
 * The agent's JSON (de)serialization for its Kubernetes client: fabric8's own, except that the kinds
 * a watch event may carry are registered here rather than discovered.
 *
 * <p>By default the first watch event makes fabric8 walk every {@code KubernetesResource} listed in
 * META-INF/services (about 320 types: Gateway API, DRA, flow control...) and instantiate each, which
 * loads some 700 model classes that stay in metaspace for the process's life. The agent watches four
 * kinds; their classes are loaded anyway.
 *
 * <p>EgressServices are read by {@link EgressServiceDecoding}: one that fails the schema is refused alone
 * instead of failing the list or watch that carries it.
 */
public final class AgentSerialization {
  /**
   * What a watch event's {@code object} can be in this process: the kinds the agent's and the
   * allocator's informers watch, and the Status of an ERROR event (410 Gone must be recognised as
   * such for the informer to relist). A kind missing here still works (fabric8 converts an unknown
   * object to the watched type), only less cheaply; a missing Status would not.
   */
  public static final List<Class<? extends KubernetesResource>> WATCH_EVENT_KINDS =
      Stream.concat(ClusterInformers.KINDS.stream(), Stream.of(Status.class)).toList();

  private AgentSerialization() {}

  /** A fresh serialization (each client gets its own: it holds the client's ObjectMapper). */
  public static KubernetesSerialization create() {
    ObjectMapper mapper = new ObjectMapper();
    mapper.registerModule(EgressServiceDecoding.module());
    KubernetesSerialization serialization = new KubernetesSerialization(mapper, false);
    WATCH_EVENT_KINDS.forEach(serialization::registerKubernetesResource);
    return serialization;
  }

  /** A client builder with {@link #create()}; set the configuration on it as usual. */
  public static KubernetesClientBuilder clientBuilder() {
    return new KubernetesClientBuilder().withKubernetesSerialization(create());
  }
}
