package io.egressservice.uninstall;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.objects.EgressServices;
import io.egressservice.testing.MockApiObjects;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceSpec.SourceIPBy;

/**
 * What the allocator wrote, and only that, goes: host labels of every node (a deleted service's too), also-receive
 * annotations, status.host; other labels and annotations stay; a second run finds nothing left to write.
 */
@EnableKubernetesMockClient(crud = true)
class AllocatorLeftoversTest {
  KubernetesClient client;

  @Test
  void removesTheHostLabelsAlsoReceiveAnnotationsAndHostsAndNothingElse() {
    MockApiObjects.installCrd(client);
    for (String node : new String[] {"node-a", "node-b"}) {
      client.nodes().resource(new NodeBuilder().withNewMetadata().withName(node)
          .addToLabels("kubernetes.io/hostname", node)
          .addToLabels("egress-service.k8s.ovn.org/shop-web", "")
          .addToLabels("egress-service.k8s.ovn.org/gone-long-ago", "").endMetadata().build()).create();
    }
    EgressService web = EgressServices.of("shop", "web", SourceIPBy.LOADBALANCERIP, "", "node-a");
    web.getMetadata().setAnnotations(Map.of("egress-service.k8s.ovn.org/also-receive", "node-a,node-b",
        "team", "shop"));
    client.resources(EgressService.class).resource(web).create();
    client.resources(EgressService.class).resource(web).updateStatus();

    AllocatorLeftovers.Removed removed = AllocatorLeftovers.remove(client, Duration.ofSeconds(10));

    assertThat(removed.failures()).isEmpty();
    assertThat(removed.labels()).isEqualTo(4);
    assertThat(removed.annotations()).isEqualTo(1);
    assertThat(removed.hosts()).isEqualTo(1);
    for (String node : new String[] {"node-a", "node-b"}) {
      assertThat(labels(node)).as(node).containsOnlyKeys("kubernetes.io/hostname");
    }
    EgressService after = client.resources(EgressService.class).inNamespace("shop").withName("web").get();
    assertThat(nonNull(after.getMetadata().getAnnotations())).containsOnlyKeys("team");
    assertThat(after.getStatus().getHost()).isEmpty();
    assertThat(after.getSpec().getSourceIPBy()).isEqualTo(SourceIPBy.LOADBALANCERIP);

    AllocatorLeftovers.Removed again = AllocatorLeftovers.remove(client, Duration.ofSeconds(10));
    assertThat(again.labels() + again.annotations() + again.hosts()).as("a second run: %s", again).isZero();
  }

  private Map<String, String> labels(String node) {
    return nonNull(client.nodes().withName(node).get().getMetadata().getLabels());
  }

  /** The mock keeps a key a merge patch set to null, with the value null: such keys are gone. */
  private static Map<String, String> nonNull(Map<String, String> in) {
    Map<String, String> out = new HashMap<>();
    if (in != null) {
      in.forEach((k, v) -> {
        if (v != null) {
          out.put(k, v);
        }
      });
    }
    return out;
  }
}
