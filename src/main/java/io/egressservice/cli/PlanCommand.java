package io.egressservice.cli;

import io.egressservice.objects.ClusterObjects;
import io.egressservice.objects.ObjectFiles;
import io.egressservice.objects.ObjectsException;
import io.egressservice.objects.PlanInputs;
import io.egressservice.plan.DesiredState;
import io.egressservice.plan.NetworkResolution;
import io.egressservice.plan.Planner;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code plan}: offline, prints the desired state of one node for the given objects; touches nothing. */
@Command(name = "plan", mixinStandardHelpOptions = true,
    description = "Print the desired ip rules and nft SNAT entries of a node for the given objects (touches nothing).")
public final class PlanCommand implements Callable<Integer> {
  @Option(names = "--objects", required = true, arity = "1..*", paramLabel = "PATH",
      description = "YAML/JSON files or directories (multi-document, kind: List).")
  List<Path> objects;

  @Option(names = "--node", required = true, description = "The node to plan for.")
  String node;

  @Option(names = {"-o", "--output"}, defaultValue = "text", description = "text or json (default ${DEFAULT-VALUE}).")
  String output;

  @Mixin PlanOptions planOptions;

  @Spec CommandSpec spec;

  @Override
  public Integer call() {
    if (!output.equals("text") && !output.equals("json")) {
      throw new Main.UserError("--output must be text or json, not '" + output + "'");
    }
    var config = planOptions.toConfig();
    PrintWriter err = spec.commandLine().getErr();
    ClusterObjects loaded = loadObjects(objects, err);
    DesiredState state = Planner.plan(
        PlanInputs.of(node, loaded, List.of(), NetworkResolution.offlineResolution(), config));
    PrintWriter out = spec.commandLine().getOut();
    out.print(output.equals("json") ? PlanJson.render(state) + "\n" : PlanText.render(state));
    out.flush();
    return Main.EXIT_OK;
  }

  static ClusterObjects loadObjects(List<Path> paths, PrintWriter err) {
    try {
      ClusterObjects loaded = ObjectFiles.load(paths, note -> err.println("note: " + note));
      err.flush();
      return loaded;
    } catch (ObjectsException e) {
      throw new Main.UserError(e.getMessage());
    }
  }
}
