package io.egressservice.cli;

import io.egressservice.explain.AgentView;
import io.egressservice.explain.AgentViewReader;
import java.net.URI;
import java.time.Clock;
import java.util.Optional;
import picocli.CommandLine.Option;

/**
 * {@code --agent-metrics URL|none}: where {@code status} and {@code explain} ask the running agent how old its view
 * of the API is. By default the agent's own metrics port, from the environment the DaemonSet gives the agent's
 * container (where {@code kubectl exec} and the kubectl plugin run these commands).
 */
public final class AgentViewOption {
  static final String NONE = "none";

  @Option(names = "--agent-metrics", paramLabel = "URL|none",
      description = {"The running agent's /metrics, asked how old its view of the API is (default: this node's agent,"
          + " http://$EGRESS_AGENT_METRICS_BIND_ADDRESS:$EGRESS_AGENT_METRICS_PORT/metrics, 127.0.0.1 and 9464 when"
          + " unset); none: do not ask."})
  String url;

  /** The agent at {@code metricsUrl}, asked now. */
  static AgentView read(URI metricsUrl) {
    return new AgentViewReader(Clock.systemUTC()).read(metricsUrl);
  }

  /** Where to ask, or empty with {@code none}; a URL that is not http(s) is a user error. */
  Optional<URI> uri() {
    if (url != null && url.equals(NONE)) {
      return Optional.empty();
    }
    if (url != null && !url.isBlank()) {
      URI given;
      try {
        given = URI.create(url);
      } catch (IllegalArgumentException e) {
        throw new Main.UserError("--agent-metrics '" + url + "' is not a URL: " + e.getMessage());
      }
      if (!"http".equals(given.getScheme()) && !"https".equals(given.getScheme()) || given.getHost() == null) {
        throw new Main.UserError("--agent-metrics '" + url + "' is not an http URL (or none)");
      }
      return Optional.of(given);
    }
    return Optional.of(fromEnvironment(System.getenv("EGRESS_AGENT_METRICS_BIND_ADDRESS"),
        System.getenv("EGRESS_AGENT_METRICS_PORT")));
  }

  /** The agent's metrics URL from the address and port the DaemonSet sets (an IPv6 address in brackets). */
  static URI fromEnvironment(String bindAddress, String port) {
    String host = bindAddress == null || bindAddress.isBlank() ? "127.0.0.1" : bindAddress.strip();
    if (host.contains(":") && !host.startsWith("[")) {
      host = "[" + host + "]";
    }
    String p = port == null || port.isBlank() ? "9464" : port.strip();
    return URI.create("http://" + host + ":" + p + "/metrics");
  }
}
