package io.egressservice.allocator;

/** Why an EgressService has the host it has; {@link #eventReason()} is the Kubernetes Event reason. */
public enum Reason {
  /** {@code sourceIPBy: Network}: host {@code ALL}. */
  ALL_NODES("AllNodes", true),
  /** A node was chosen (or kept). */
  HOST_ALLOCATED("HostAllocated", true),
  /** No Service with the EgressService's namespace/name. */
  SERVICE_NOT_FOUND("ServiceNotFound", false),
  /** The Service is not of type LoadBalancer. */
  NOT_LOAD_BALANCER("NotLoadBalancer", false),
  /** The Service has no {@code status.loadBalancer.ingress[].ip}. */
  NO_INGRESS_IP("NoIngressIP", false),
  /** {@code spec.nodeSelector} cannot be evaluated. */
  INVALID_NODE_SELECTOR("InvalidNodeSelector", false),
  /** No node passes every test. */
  NO_HOST_AVAILABLE("NoHostAvailable", false),
  /** The EgressService's spec cannot be read (it fails the CRD's schema): refused, its status left alone. */
  MALFORMED("MalformedEgressService", false),
  /** {@code spec.network} is not a network any EgressService may name (its spelling, a reserved table). */
  INVALID_NETWORK("InvalidNetwork", false),
  /** An older EgressService has the same host node label ({@code team/a-web} and {@code team-a/web}). */
  HOST_LABEL_TAKEN("HostLabelTaken", false),
  /** The EgressServicePolicy, enforced, grants the namespace not this network or LoadBalancer IP. */
  NOT_GRANTED("NotGranted", false);

  /** Event reason written when the host label cannot be set. */
  public static final String LABEL_NOT_SET = "LabelNotSet";

  private final String eventReason;
  private final boolean allocated;

  Reason(String eventReason, boolean allocated) {
    this.eventReason = eventReason;
    this.allocated = allocated;
  }

  public String eventReason() {
    return eventReason;
  }

  /** True when the service has a host ({@code ALL} or a node). */
  public boolean allocated() {
    return allocated;
  }
}
