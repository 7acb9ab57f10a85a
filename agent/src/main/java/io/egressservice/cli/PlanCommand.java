package io.egressservice.cli;

import io.egressservice.objects.ClusterObjects;
import io.egressservice.objects.ObjectFiles;
import io.egressservice.objects.ObjectsException;
import io.egressservice.objects.PlanInputs;
import io.egressservice.plan.DesiredState;
import io.egressservice.plan.NetworkResolution;
import io.egressservice.plan.Planner;
import io.egressservice.text.Printable;
import io.fabric8.kubernetes.api.model.discovery.v1.Endpoint;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code plan}: offline, prints the desired state of one node for the given objects; touches nothing. */
@Command(name = "plan", mixinStandardHelpOptions = true,
    description = "Print the desired ip rules and nft SNAT entries of a node for the given objects (touches nothing).",
    footer = {"%nExamples:",
        "  kubectl get egressservices,services,endpointslices,nodes -A -o yaml > cluster.yaml",
        "  egress-service-agent plan --objects cluster.yaml --node node-b",
        "  egress-service-agent plan --objects manifests/ --node node-b -o json --service-cidr 10.96.0.0/12"})
public final class PlanCommand implements Callable<Integer> {
  @Option(names = "--objects", required = true, arity = "1..*", paramLabel = "PATH",
      description = "YAML/JSON files or directories (multi-document, kind: List).")
  List<Path> objects;

  @Option(names = {"--node", "--node-name"}, required = true, description = "The node to plan for (--node-name as on run).")
  String node;

  @Option(names = {"-o", "--output"}, defaultValue = "text", description = "text or json (default ${DEFAULT-VALUE}).")
  String output;

  @Mixin PlanOptions planOptions;

  @Mixin EgressServicePolicyOptions policy;

  @Spec CommandSpec spec;

  @Override
  public Integer call() {
    if (!output.equals("text") && !output.equals("json")) {
      throw new Main.UserError("--output must be text or json, not '" + output + "'");
    }
    var config = planOptions.toConfig();
    PrintWriter err = spec.commandLine().getErr();
    ClusterObjects loaded = policy.applyTo(loadObjects(objects, err));
    warnIfUnknownNode(loaded, node, err);
    DesiredState state = Planner.plan(
        PlanInputs.of(node, loaded, List.of(), NetworkResolution.offlineResolution(), config));
    PrintWriter out = spec.commandLine().getOut();
    out.print(output.equals("json") ? PlanJson.render(state) + "\n" : PlanText.render(state));
    out.flush();
    return Main.EXIT_OK;
  }

  /**
   * A warning on stderr when {@code node} appears in no object (no Node of that name, no endpoint on
   * it, no EgressService hosted by it): most likely a typo, whose plan would be silently empty. Still
   * planned, as kubectl warns and goes on: objects given without their Nodes are a legitimate input
   * (the plan then lacks only the node's addresses and pod CIDRs), and a script's exit code should
   * not depend on which files it happened to pass.
   */
  static void warnIfUnknownNode(ClusterObjects objects, String node, PrintWriter err) {
    Set<String> known = new TreeSet<>();
    objects.nodes().forEach(n -> known.add(n.getMetadata().getName()));
    if (known.contains(node)) {
      return;
    }
    Set<String> mentioned = new TreeSet<>();
    for (EndpointSlice slice : objects.endpointSlices()) {
      if (slice.getEndpoints() != null) {
        slice.getEndpoints().stream().map(Endpoint::getNodeName).filter(Objects::nonNull).forEach(mentioned::add);
      }
    }
    objects.egressServices().stream()
        .map(es -> es.getStatus() == null ? null : es.getStatus().getHost())
        .filter(h -> h != null && !h.isEmpty() && !h.equals("ALL"))
        .forEach(mentioned::add);
    if (mentioned.contains(node)) {
      return;
    }
    known.addAll(mentioned);
    Printable.println(err, "warning: node '" + node + "' appears in no object (no Node, no endpoint on it, no EgressService"
        + " hosted by it); planning it as a node without addresses, pod CIDRs or endpoints. "
        + (known.isEmpty() ? "The objects name no node at all." : "Nodes the objects name: " + String.join(", ", known)));
    err.flush();
  }

  static ClusterObjects loadObjects(List<Path> paths, PrintWriter err) {
    try {
      ClusterObjects loaded = ObjectFiles.load(paths, note -> Printable.println(err, "note: " + note),
          warning -> Printable.println(err, "warning: " + warning));
      err.flush();
      return loaded;
    } catch (ObjectsException e) {
      throw new Main.UserError(e.getMessage());
    }
  }
}
