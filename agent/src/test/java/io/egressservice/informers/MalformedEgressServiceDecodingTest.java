package io.egressservice.informers;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.controller.AgentSerialization;
import io.egressservice.objects.MalformedEgressService;
import io.egressservice.objects.PlanInputs;
import io.egressservice.plan.EgressServiceInfo;
import com.fasterxml.jackson.core.type.TypeReference;
import io.fabric8.kubernetes.api.model.DefaultKubernetesResourceList;
import io.fabric8.kubernetes.api.model.WatchEvent;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.ovn.k8s.v1.EgressService;

/**
 * Malformed EgressServices at the decoding: a list or watch event carrying an EgressService that fails the schema
 * used to fail as a whole; now that one object is a {@link MalformedEgressService} saying what is wrong.
 */
class MalformedEgressServiceDecodingTest {
  static final KubernetesSerialization SERIALIZATION = AgentSerialization.create();

  static String egressService(String name, String spec) {
    return "{\"apiVersion\":\"k8s.ovn.org/v1\",\"kind\":\"EgressService\",\"metadata\":{\"name\":\"" + name
        + "\",\"namespace\":\"shop\",\"resourceVersion\":\"7\"},\"spec\":" + spec + ",\"status\":{\"host\":\"node-a\"}}";
  }

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
      "{\"sourceIPBy\":\"Bogus\"}|spec.sourceIPBy: 'Bogus' is not one of LoadBalancerIP, Network",
      "{\"nodeSelector\":\"a=b\"}|spec.nodeSelector: ",
      "{\"network\":{\"table\":100}}|spec.network: ",
  })
  void aListWithOneMalformedEgressServiceKeepsTheOthers(String badSpec, String problem) {
    String list = "{\"apiVersion\":\"k8s.ovn.org/v1\",\"kind\":\"EgressServiceList\",\"metadata\":{},\"items\":["
        + egressService("bad", badSpec) + "," + egressService("good", "{\"network\":\"100\"}") + "]}";

    DefaultKubernetesResourceList<EgressService> decoded = SERIALIZATION.unmarshal(
        new ByteArrayInputStream(list.getBytes(StandardCharsets.UTF_8)),
        new TypeReference<DefaultKubernetesResourceList<EgressService>>() {});

    assertThat(decoded.getItems()).hasSize(2);
    EgressService bad = decoded.getItems().get(0);
    assertThat(bad).isInstanceOfSatisfying(MalformedEgressService.class, m -> assertThat(m.problem()).startsWith(problem));
    assertThat(bad.getMetadata().getName()).isEqualTo("bad");
    assertThat(bad.getStatus().getHost()).isEqualTo("node-a");
    EgressServiceInfo refused = PlanInputs.egressService(LeanObjects.egressService(bad));
    assertThat(refused.malformed()).isPresent();
    EgressService good = decoded.getItems().get(1);
    assertThat(good).isExactlyInstanceOf(EgressService.class);
    assertThat(good.getSpec().getNetwork()).isEqualTo("100");
  }

  @Test
  void aWatchEventWithAMalformedEgressServiceIsDecoded() {
    WatchEvent e = SERIALIZATION.unmarshal("{\"type\":\"ADDED\",\"object\":"
        + egressService("bad", "{\"sourceIPBy\":\"Bogus\"}") + "}", WatchEvent.class);

    assertThat(e.getObject()).isInstanceOf(MalformedEgressService.class);
  }
}
