package io.egressservice.cli;

import java.util.Optional;
import picocli.CommandLine.Option;

/** {@code --netns NAME}: act in {@code /run/netns/NAME} instead of the current network namespace. */
public final class NetnsOption {
  @FromEnvironment
  @Option(names = "--netns",
      description = "Network namespace (as in 'ip netns') to act in; default: the current one.")
  String netns;

  Optional<String> value() {
    return Optional.ofNullable(netns).filter(n -> !n.isBlank());
  }
}
