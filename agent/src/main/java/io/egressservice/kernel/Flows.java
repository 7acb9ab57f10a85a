package io.egressservice.kernel;

import io.egressservice.ip.IpPrefix;
import io.egressservice.netlink.Conntrack;
import java.util.Collection;
import java.util.List;

/**
 * The connection tracking table of one network namespace, as far as the agent restarts flows in it. Every method
 * returns the errors, one line each, instead of throwing: a flow that cannot be restarted must not stop a reconcile.
 */
public interface Flows {
  /** Deletes every entry from one of {@code sources} to a destination outside {@code inCluster}. */
  List<String> restartFlowsLeavingTheCluster(Collection<IpPrefix> sources, Collection<IpPrefix> inCluster);

  /** The entries {@link #restartFlowsLeavingTheCluster} would delete now, to delete right after a change. */
  Conntrack.Found find(Collection<IpPrefix> sources, Collection<IpPrefix> inCluster);

  /** Deletes what {@link #find} found. */
  List<String> delete(Conntrack.Found found);

  /** Deletes the entries that took over what {@link #find} found with the source's own address. */
  List<String> deleteTakeovers(Conntrack.Found found);
}
