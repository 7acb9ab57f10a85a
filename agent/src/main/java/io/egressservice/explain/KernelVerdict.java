package io.egressservice.explain;

import io.egressservice.ip.IpPrefix;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * What one node's kernel does with a packet from a source to a destination, as the kernel itself answers it
 * ({@code ip route get ... iif <pod's interface> mark <its mark>}) and as the agent's nft objects say.
 *
 * @param source the packet's source (the pod's address)
 * @param destination where it goes
 * @param podInterface the node's interface the pod's packets arrive on
 * @param mark the firewall mark our nft map gives it (mark mode), 0 if none
 * @param table the table whose route decided
 * @param routeType unicast, unreachable, ... ({@code RouteType}, lower case)
 * @param outputInterface the interface it leaves the node by
 * @param gateway the next hop, if any
 * @param rule the owned rule that matched it, as {@code ip rule} prints it; empty: none of ours did
 * @param ruleTable the table of that rule
 * @param thrownBy the owned throw route that handed the lookup back (an in-cluster destination), if one did
 * @param steeredTo the host address it is steered to over the steering device, if it is
 * @param snat the address our SNAT map gives it (not for in-cluster destinations), if any
 * @param snatService the SNAT entry's service ({@code namespace/name}), if any
 * @param inCluster whether the destination is one of our in-cluster destinations (never SNATed)
 * @param heldBy the service whose missing host holds (drops) the source's packets out of the cluster, if any
 * @param heldDrops packets dropped so far for that service
 * @param guarded whether the guard knows the source as ours (it then leaves only from its own link)
 * @param guardDrops the guard's "spoofed" counter
 */
public record KernelVerdict(IpPrefix source, IpPrefix destination, String podInterface, long mark, long table,
    String routeType, String outputInterface, Optional<IpPrefix> gateway, Optional<String> rule, OptionalLong ruleTable,
    Optional<String> thrownBy, Optional<IpPrefix> steeredTo, Optional<IpPrefix> snat, Optional<String> snatService,
    boolean inCluster, Optional<String> heldBy, long heldDrops, boolean guarded, long guardDrops,
    List<String> notes) {
  public KernelVerdict {
    Objects.requireNonNull(source);
    Objects.requireNonNull(destination);
    notes = List.copyOf(notes);
  }

  /** Whether any of our objects acts on this packet. */
  public boolean touched() {
    return rule.isPresent() || snat.isPresent() || heldBy.isPresent() || mark != 0;
  }

  /** Dropped by the no-host table: it never leaves. */
  public boolean held() {
    return heldBy.isPresent() && !inCluster;
  }

  public boolean steered() {
    return steeredTo.isPresent();
  }
}
