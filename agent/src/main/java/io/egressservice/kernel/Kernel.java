package io.egressservice.kernel;

import io.egressservice.netlink.Routing;
import java.util.Optional;

/**
 * The kernel of one network namespace, as the agent reads and writes it: the one port between the agent's logic and
 * Linux. {@code kernel.linux.LinuxKernel} is the real one (rtnetlink, libnftables, nfnetlink, conntrack); the tests
 * have an in-memory one, so that the controller's logic runs without privileges.
 */
public interface Kernel extends AutoCloseable {
  /** "netns X" or "the current network namespace", for messages. */
  String describe();

  /** The named namespace ({@code /run/netns/NAME}), empty for the process's own. */
  Optional<String> netns();

  /** Rules, routes, links, addresses and their notifications. */
  Routing routing();

  /** A libnftables context of its own (each table's reader keeps its own). */
  Nftables openNftables();

  /** Where the nftables ruleset generation is read (closed by the caller). */
  GenerationSource openGeneration();

  /** The conntrack table. */
  Flows flows();

  /** {@code net.ipv4.conf.<device>.<setting>}, empty when the device or the setting is not there. */
  Optional<Integer> ipv4Conf(String device, String setting);

  /** Closes what it opened; a namespace it entered is left. */
  @Override
  void close();
}
