package io.egressservice.cli;

import io.egressservice.dataplane.Dataplane;
import io.egressservice.dataplane.DataplaneException;
import io.egressservice.explain.AgentView;
import io.egressservice.explain.AgentViewOutput;
import io.egressservice.explain.ApiClaims;
import io.egressservice.explain.ApiInspector;
import io.egressservice.explain.ExplainException;
import io.egressservice.explain.ExplainJson;
import io.egressservice.explain.ExplainText;
import io.egressservice.explain.Explanation;
import io.egressservice.explain.KernelInspector;
import io.egressservice.explain.KernelVerdict;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.netlink.NetlinkException;
import io.egressservice.kernel.Nftables;
import io.egressservice.kernel.NftException;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code explain}: why a pod's packets leave this node the way they do, from the kernel and the API. */
@Command(name = "explain", mixinStandardHelpOptions = true,
    description = {"Why does this pod leave with that address? Asks this node's kernel how it routes a packet of the"
        + " pod (arriving on the pod's interface, with the mark our nft map gives it) to DEST, which of our rules or"
        + " throw routes decided, whether it is steered and to which host, the SNAT, no-host and guard verdicts; then"
        + " the API (in cluster, or with --kubeconfig): which EgressService and Service claim the pod, the host, and"
        + " every reason given for refusing or holding it. Ends with one sentence. Changes nothing."},
    footer = {"%nExamples:",
        "  egress-service-agent explain 10.128.2.5 --to 203.0.113.10",
        "  egress-service-agent explain shop/web-5d9 -o json",
        "  kubectl egress-service explain shop/web-5d9     (the kubectl plugin: runs this in the pod's node's agent)"})
public final class ExplainCommand implements Callable<Integer> {
  /** Where "out of the cluster" goes when --to is not given: a public address, routed like any other. */
  static final String DEFAULT_V4 = "1.1.1.1";
  static final String DEFAULT_V6 = "2606:4700:4700::1111";

  @Parameters(index = "0", paramLabel = "POD-IP|NAMESPACE/POD", description = "The pod, by address or by name.")
  String target;

  @Option(names = "--to", paramLabel = "DEST",
      description = "Destination address (default: an address outside the cluster, " + DEFAULT_V4 + " or " + DEFAULT_V6 + ").")
  String to;

  @Mixin NetnsOption netns;

  @Mixin PlanOptions planOptions;

  @Mixin AgentViewOption agentView;

  @Option(names = {"-o", "--output"}, defaultValue = "text", description = "text or json (default ${DEFAULT-VALUE}).")
  String output;

  @FromEnvironment
  @Option(names = "--kubeconfig", paramLabel = "FILE",
      description = "The API to ask (default: in cluster, the pod's service account; else ~/.kube/config if present).")
  Path kubeconfig;

  @Option(names = "--pod-ip", paramLabel = "IP", split = ",",
      description = {"The addresses of NAMESPACE/POD, as its status.podIPs says: the pod is explained by them and"
          + " named as given, without reading it from the API (the agent's account may not read pods; the kubectl"
          + " plugin reads them with yours and passes them)."})
  List<String> podIps = List.of();

  @Option(names = "--no-api", description = "Ask only the kernel.")
  boolean noApi;

  @FromEnvironment
  @Option(names = {"--node", "--node-name"},
      description = "This node's name, for the sentence (default: the pod's node from the API).")
  String node;

  @Spec CommandSpec spec;

  @Override
  public Integer call() {
    if (!output.equals("text") && !output.equals("json")) {
      throw new Main.UserError("--output must be text or json, not '" + output + "'");
    }
    Optional<java.net.URI> agentViewAt = agentView.uri(); // a bad --agent-metrics is refused before anything is read
    boolean byName = target.contains("/");
    Optional<IpPrefix> dest = Optional.ofNullable(to).map(t -> parse(t, "--to"));
    boolean askApi = !noApi && (KubeClients.givenOrInCluster(kubeconfig)
        || Files.isReadable(Path.of(System.getProperty("user.home"), ".kube", "config")));
    if (!podIps.isEmpty() && !byName) {
      throw new Main.UserError("--pod-ip is for a pod given by name (NAMESPACE/POD), not " + target);
    }
    if (byName && !askApi && podIps.isEmpty()) {
      throw new Main.UserError("a pod by name (" + target + ") needs the API: give --kubeconfig, or its address");
    }
    KubernetesClient client = askApi ? KubeClients.create(kubeconfig) : null;
    try {
      ApiInspector api = client == null ? null : new ApiInspector(client);
      IpPrefix source = byName ? podAddress(api, dest) : parse(target, "the pod address");
      IpPrefix destination = dest.orElse(IpPrefix.parseHost(source.family() == IpFamily.V4 ? DEFAULT_V4 : DEFAULT_V6));
      if (destination.family() != source.family()) {
        throw new Main.UserError("--to " + to + " is not of the family of " + source.addressText());
      }
      ApiClaims claims = ApiClaims.NONE;
      Optional<String> apiError = Optional.empty();
      if (api != null) {
        try {
          claims = api.claims(source);
        } catch (ExplainException | io.fabric8.kubernetes.client.KubernetesClientException e) {
          apiError = Optional.of(e.getMessage());
        }
      }
      if (byName && claims.pod().filter(target::equals).isEmpty()) {
        // a pod no EndpointSlice names (it did not opt in): named as the user named it
        claims = claims.forPod(target, Optional.ofNullable(node).filter(n -> !n.isBlank()));
      }
      KernelVerdict verdict = kernel(source, destination);
      String nodeName = Optional.ofNullable(node).filter(n -> !n.isBlank()).or(claims::podNode).orElse("this node");
      Explanation e = new Explanation(nodeName, verdict, claims, api != null, apiError);
      Optional<AgentView> view = agentViewAt.map(AgentViewOption::read);
      PrintWriter out = spec.commandLine().getOut();
      if (output.equals("json")) {
        var root = ExplainJson.of(e);
        view.ifPresent(v -> root.set("agentView", AgentViewOutput.json(v)));
        out.println(PlanJson.write(root));
      } else {
        ExplainText.write(out, e, view.map(AgentViewOutput::text).orElse(List.of()));
      }
      out.flush();
      return Main.EXIT_OK;
    } catch (ExplainException e) {
      throw new Main.UserError(e.getMessage());
    } finally {
      if (client != null) {
        client.close();
      }
    }
  }

  private KernelVerdict kernel(IpPrefix source, IpPrefix destination) {
    var config = planOptions.toConfig();
    try (Dataplane dp = KernelAccess.open(netns.value(), config.priority(), config.ruleProtocol());
        Nftables nft = dp.kernel().openNftables()) {
      return new KernelInspector(dp, nft).inspect(source, destination);
    } catch (DataplaneException | NetlinkException | NftException e) {
      throw new Main.SystemError(e.getMessage(), e);
    }
  }

  /** The pod's address of DEST's family, else its first. */
  private IpPrefix podAddress(ApiInspector api, Optional<IpPrefix> dest) {
    String[] parts = target.split("/", -1);
    if (parts.length != 2 || parts[0].isEmpty() || parts[1].isEmpty()) {
      throw new Main.UserError("'" + target + "' is neither an address nor NAMESPACE/POD");
    }
    List<String> addresses = podIps.isEmpty() ? ApiInspector.addresses(api.pod(parts[0], parts[1])) : podIps;
    List<IpPrefix> ips = addresses.stream().map(a -> parse(a, "the pod's address")).toList();
    if (ips.isEmpty()) {
      throw new Main.UserError("pod " + target + " has no address yet (status.podIPs is empty)");
    }
    return ips.stream().filter(ip -> dest.isEmpty() || ip.family() == dest.get().family()).findFirst()
        .orElseThrow(() -> new Main.UserError("pod " + target + " has no " + dest.get().family() + " address"));
  }

  private static IpPrefix parse(String text, String what) {
    try {
      return IpPrefix.parseHost(text);
    } catch (RuntimeException e) {
      throw new Main.UserError(what + " '" + text + "' is not an IP address" + (what.equals("the pod address")
          ? " (or NAMESPACE/POD)" : ""));
    }
  }
}
