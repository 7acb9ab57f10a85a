package io.egressservice.kernel.fake;

import io.egressservice.ip.IpPrefix;
import io.egressservice.kernel.Flows;
import io.egressservice.netlink.Conntrack;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/**
 * A conntrack table without flows that records what it was asked to restart: the controller's tests check that a
 * move restarts the sources it should, not what the kernel then deletes (the datapath tests do that).
 */
public final class FakeFlows implements Flows {
  /** One {@link #restartFlowsLeavingTheCluster} call. */
  public record Restart(List<IpPrefix> sources, List<IpPrefix> inCluster) {}

  private final List<Restart> restarts = new ArrayList<>();
  private final List<List<IpPrefix>> finds = new ArrayList<>();

  @Override
  public synchronized List<String> restartFlowsLeavingTheCluster(Collection<IpPrefix> sources,
      Collection<IpPrefix> inCluster) {
    restarts.add(new Restart(sources.stream().sorted().toList(), inCluster.stream().sorted().toList()));
    return List.of();
  }

  /** Finds nothing (the fake has no flows); the sources asked for are recorded. */
  @Override
  public synchronized Conntrack.Found find(Collection<IpPrefix> sources, Collection<IpPrefix> inCluster) {
    finds.add(sources.stream().sorted().toList());
    // With no sources the real table is not even read: the empty result, without a kernel.
    return new Conntrack().find(null, List.of(), inCluster);
  }

  @Override
  public List<String> delete(Conntrack.Found found) {
    return List.of();
  }

  @Override
  public List<String> deleteTakeovers(Conntrack.Found found) {
    return List.of();
  }

  /** The restarts asked for so far, in order. */
  public synchronized List<Restart> restarts() {
    return List.copyOf(restarts);
  }

  /** The sources of each {@link #find} so far, in order. */
  public synchronized List<List<IpPrefix>> finds() {
    return List.copyOf(finds);
  }
}
