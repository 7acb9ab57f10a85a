package io.egressservice.netlink;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.util.Objects;

/**
 * A route's lightweight-tunnel encapsulation of type {@code ip} / {@code ip6} ({@code RTA_ENCAP_TYPE}
 * LWTUNNEL_ENCAP_IP or _IP6, {@code RTA_ENCAP} with LWTUNNEL_IP_*): what {@code ip route add ... encap
 * ip id ID dst ADDR [csum] dev DEV} gives a collect-metadata tunnel device (VXLAN {@code external}),
 * which sends each packet to the route's own destination. The outer family is that of {@code destination}.
 *
 * @param id the tunnel key (the VXLAN VNI, 24 bits)
 * @param checksum TUNNEL_CSUM: the outer UDP checksum is computed; an IPv6 outer header needs it (a zero
 *     UDP checksum over IPv6 is dropped by the receiver unless it opted in with {@code udp6zerocsumrx})
 */
public record RouteEncap(IpPrefix destination, long id, boolean checksum) {
  public RouteEncap {
    Objects.requireNonNull(destination, "destination");
    if (!destination.isHost()) {
      throw new IllegalArgumentException("tunnel destination " + destination + " is not a single address");
    }
    if (id < 0) {
      throw new IllegalArgumentException("tunnel id " + id + " is negative");
    }
  }

  public IpFamily family() {
    return destination.family();
  }

  /** Like iproute2: {@code encap ip id 1 dst 192.168.1.10 csum}. */
  @Override
  public String toString() {
    return "encap " + (family() == IpFamily.V4 ? "ip" : "ip6") + " id " + id + " dst " + destination
        + (checksum ? " csum" : "");
  }
}
