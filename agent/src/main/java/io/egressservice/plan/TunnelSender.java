package io.egressservice.plan;

import io.egressservice.ip.IpPrefix;
import java.util.Comparator;
import java.util.Objects;

/**
 * A pair the steering port of a receiving node accepts: VXLAN-GPE whose outer source is {@code nodeAddress} (an
 * InternalIP of the Node the source lives on) and whose inner packet's source is {@code innerSource}. Both of one
 * family: a node steers an endpoint to the host's InternalIP of the endpoint's family, so IPv4 never arrives inside
 * IPv6 or the other way round.
 *
 * @param handOver the inner source is the service's LB IP, accepted only while a planned move is under way (the
 *     {@value EgressServiceInfo#ALSO_RECEIVE_ANNOTATION} annotation): a flow of the old host's own pod that the old
 *     host SNATed before it switched to steering keeps that NAT until the old host restarts it
 */
public record TunnelSender(IpPrefix nodeAddress, IpPrefix innerSource, boolean handOver) {
  public static final Comparator<TunnelSender> ORDER = Comparator.comparing(TunnelSender::nodeAddress)
      .thenComparing(TunnelSender::innerSource).thenComparing(TunnelSender::handOver);

  public TunnelSender {
    Objects.requireNonNull(nodeAddress);
    Objects.requireNonNull(innerSource);
    if (!nodeAddress.isHost() || !innerSource.isHost() || nodeAddress.family() != innerSource.family()) {
      throw new IllegalArgumentException("a tunnel sender is one node address and one source of its family, not "
          + nodeAddress + " and " + innerSource);
    }
  }

  @Override
  public String toString() {
    return innerSource.addressText() + " from " + nodeAddress.addressText() + (handOver ? " (planned move)" : "");
  }
}
