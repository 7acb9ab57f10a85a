package io.egressservice.plan;

/** {@code spec.sourceIPBy}; absent means {@link #LOAD_BALANCER_IP}. */
public enum SourceIpBy {
  LOAD_BALANCER_IP("LoadBalancerIP"),
  NETWORK("Network");

  private final String apiValue;

  SourceIpBy(String apiValue) {
    this.apiValue = apiValue;
  }

  /** The value as written in the API object. */
  public String apiValue() {
    return apiValue;
  }
}
