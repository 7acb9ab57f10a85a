package io.egressservice.deploy;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import java.util.Map;

/** charts/egress-service-agent rendered by Helm's own code ({@link HelmChart}), for tests outside this package. */
public final class ChartRender {
  private ChartRender() {}

  /** {@code helm template egress-service-agent charts/egress-service-agent -n egress-service-agent --set k=v ...}. */
  public static List<JsonNode> render(Map<String, Object> values) {
    return HelmChart.render(values);
  }
}
