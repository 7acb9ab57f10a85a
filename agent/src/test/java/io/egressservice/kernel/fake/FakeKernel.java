package io.egressservice.kernel.fake;

import io.egressservice.kernel.GenerationSource;
import io.egressservice.kernel.Kernel;
import io.egressservice.netlink.Routing;
import java.util.Map;
import java.util.Optional;

/**
 * An in-memory kernel for the controller's tests: one {@link FakeRouting}, one {@link FakeNftables} (every {@link
 * #openNftables()} is a view of it), its generation, an in-memory conntrack table ({@link FakeConntrack}), and the sysctls the agent reads.
 * It refuses what Linux refuses for what the agent does (see each part), so a test that passes here does not pass
 * only because nothing checked; {@link #dump()} prints all of it as canonical text to compare.
 */
public final class FakeKernel implements Kernel {
  private static final Map<String, Integer> IPV4_CONF_IDS = Map.of(
      "rp_filter", Routing.IPV4_DEVCONF_RP_FILTER, "src_valid_mark", Routing.IPV4_DEVCONF_SRC_VMARK);

  private final String name;
  private final FakeRouting routing;
  private final FakeNftables nftables;
  private final FakeConntrack flows = new FakeConntrack();

  private FakeKernel(String name) {
    this.name = name;
    this.routing = new FakeRouting(describe());
    this.nftables = new FakeNftables(describe());
  }

  /** A namespace as the agent finds one: {@code lo} up with 127.0.0.1/8 and ::1, the default rules, an empty ruleset. */
  public static FakeKernel create(String name) {
    return new FakeKernel(name);
  }

  @Override
  public String describe() {
    return "fake netns " + name;
  }

  @Override
  public Optional<String> netns() {
    return Optional.of(name);
  }

  @Override
  public FakeRouting routing() {
    return routing;
  }

  @Override
  public FakeNftables openNftables() {
    return nftables;
  }

  /** The one ruleset, for tests that edit it by hand or read it. */
  public FakeNftables nftables() {
    return nftables;
  }

  @Override
  public GenerationSource openGeneration() {
    return nftables::generation;
  }

  @Override
  public FakeConntrack flows() {
    return flows;
  }

  /** What was set through {@link Routing#setIpv4DeviceConf} or by hand, else 0; empty when there is no device. */
  @Override
  public Optional<Integer> ipv4Conf(String device, String setting) {
    Integer id = IPV4_CONF_IDS.get(setting);
    if (id == null) {
      throw new UnsupportedOperationException("the fake kernel does not model net.ipv4.conf.*." + setting);
    }
    return routing.ipv4Conf(device, id);
  }

  /** Everything, as canonical text: rules, routes, links, addresses, the nftables ruleset (see {@link KernelDump}). */
  public String dump() {
    return KernelDump.routing(routing) + KernelDump.nftables(nftables.listRuleset());
  }

  /** Ends the subscriptions made through {@link #routing()}; the state stays readable (for a test's last look). */
  @Override
  public void close() {
    routing.closeSubscriptions();
  }
}
