package io.egressservice.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.egressservice.dataplane.Dataplane;
import io.egressservice.dataplane.DataplaneException;
import io.egressservice.dataplane.ObservedState;
import io.egressservice.ip.IpPrefix;
import io.egressservice.netlink.Rule;
import io.egressservice.nft.EgressNftables;
import io.egressservice.nft.EgressNftables.SnatElement;
import io.egressservice.nft.MarkNftables.MarkElement;
import io.egressservice.objects.ClusterObjects;
import io.egressservice.plan.DesiredState;
import io.egressservice.plan.PlanConfig;
import io.egressservice.plan.RuleSpec;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code status}: the owned kernel state, grouped by service. */
@Command(name = "status", mixinStandardHelpOptions = true,
    description = "Show the owned ip rules and nft SNAT entries, grouped by service.")
public final class StatusCommand implements Callable<Integer> {
  static final String IN_CLUSTER = "(in-cluster)";
  static final String UNKNOWN = "(service unknown: SNAT-less rule; give --objects to name it)";

  @Mixin NetnsOption netns;

  @Mixin PlanOptions planOptions;

  @Option(names = {"-o", "--output"}, defaultValue = "text", description = "text or json (default ${DEFAULT-VALUE}).")
  String output;

  @Option(names = "--objects", arity = "1..*", paramLabel = "PATH",
      description = "Optional: the cluster's objects, to name the services of rules that have no SNAT entry.")
  List<Path> objects = new ArrayList<>();

  @Option(names = {"--node", "--node-name"}, defaultValue = "${env:EGRESS_AGENT_NODE_NAME}",
      description = "With --objects: this node's name (--node-name as on run).")
  String node;

  @Spec CommandSpec spec;

  @Override
  public Integer call() {
    if (!output.equals("text") && !output.equals("json")) {
      throw new Main.UserError("--output must be text or json, not '" + output + "'");
    }
    if (!objects.isEmpty() && (node == null || node.isBlank())) {
      throw new Main.UserError("--objects needs --node (or EGRESS_AGENT_NODE_NAME) to plan for this node");
    }
    PlanConfig config = planOptions.toConfig();
    ClusterObjects loaded = objects.isEmpty() ? null : PlanCommand.loadObjects(objects, spec.commandLine().getErr());
    if (loaded != null) {
      PlanCommand.warnIfUnknownNode(loaded, node, spec.commandLine().getErr());
    }
    PrintWriter out = spec.commandLine().getOut();
    try (Dataplane dp = Kernel.open(netns.value(), config.priority(), config.ruleProtocol())) {
      ObservedState observed = dp.observe();
      Map<IpPrefix, String> names = new HashMap<>();
      if (loaded != null) {
        DesiredState plan = dp.plan(loaded, node, config).desired();
        for (RuleSpec r : plan.rules()) {
          if (r.from().isPresent() && r.service().isPresent()) {
            names.put(r.from().get(), r.service().get().toString());
          }
        }
      }
      observed.nft().snat().forEach(e -> names.put(e.source(), e.comment()));
      Map<String, Group> groups = group(observed, names);
      if (output.equals("json")) {
        out.println(PlanJson.write(json(dp, config, observed, groups)));
      } else {
        text(out, dp, config, observed, groups);
      }
      out.flush();
      return Main.EXIT_OK;
    } catch (DataplaneException e) {
      throw new Main.SystemError(e.getMessage(), e);
    }
  }

  private record Group(List<Rule> rules, List<SnatElement> snat, List<MarkElement> marks) {}

  private static Group newGroup(String key) {
    return new Group(new ArrayList<>(), new ArrayList<>(), new ArrayList<>());
  }

  private static Map<String, Group> group(ObservedState observed, Map<IpPrefix, String> names) {
    Map<String, Group> groups = new TreeMap<>();
    List<Rule> rules = new ArrayList<>(observed.rules());
    rules.sort(Comparator.comparing(Rule::family).thenComparingInt(Rule::priority)
        .thenComparing(r -> r.source().orElse(null), Comparator.nullsFirst(Comparator.naturalOrder()))
        .thenComparing(r -> r.destination().orElse(null), Comparator.nullsFirst(Comparator.naturalOrder())));
    for (Rule r : rules) {
      String key = r.source().map(s -> names.getOrDefault(s, UNKNOWN))
          .orElse(r.destination().isEmpty() && r.fwmark().isPresent()
              ? "(network " + Integer.toUnsignedString(r.table()) + ": the sources marked for it)" : IN_CLUSTER);
      groups.computeIfAbsent(key, StatusCommand::newGroup).rules().add(r);
    }
    List<MarkElement> marks = new ArrayList<>(observed.marks().elements().values());
    marks.sort(Comparator.comparing(MarkElement::source));
    for (MarkElement m : marks) {
      groups.computeIfAbsent(m.comment(), StatusCommand::newGroup).marks().add(m);
    }
    List<SnatElement> snat = new ArrayList<>(observed.nft().snat());
    snat.sort(Comparator.comparing(SnatElement::source));
    for (SnatElement e : snat) {
      groups.computeIfAbsent(e.comment(), StatusCommand::newGroup).snat().add(e);
    }
    return groups;
  }

  private static void text(PrintWriter out, Dataplane dp, PlanConfig config, ObservedState observed,
      Map<String, Group> groups) {
    EgressNftables.NftState nft = observed.nft();
    out.printf("owned state in %s: %d ip rule(s) at priority %d/%d with protocol %d; nft table inet %s: %s%n",
        dp.describe(), observed.rules().size(), config.priority(), config.priority() - 1, config.ruleProtocol(),
        EgressNftables.TABLE,
        !nft.tablePresent() ? "absent" : nft.baseIntact() ? "present, " + nft.snat().size() + " SNAT entr"
            + (nft.snat().size() == 1 ? "y" : "ies") : "present but NOT intact (the next apply repairs it)");
    for (Map.Entry<String, Group> g : groups.entrySet()) {
      out.println(g.getKey());
      g.getValue().rules().forEach(r -> out.println("  rule " + r));
      g.getValue().marks().forEach(m -> out.println("  mark " + m.source() + " -> table " + m.table()
          + " (fwmark 0x" + Long.toHexString(observed.marks().networkChains().getOrDefault(m.table(), 0L)) + ")"));
      g.getValue().snat().forEach(e -> out.println("  snat " + e.source() + " -> " + e.target()));
    }
    if (!nft.inCluster().isEmpty()) {
      out.println("in-cluster destinations (never SNATed): "
          + String.join(", ", nft.inCluster().stream().map(Object::toString).toList()));
    }
  }

  private static ObjectNode json(Dataplane dp, PlanConfig config, ObservedState observed, Map<String, Group> groups) {
    ObjectNode root = new ObjectMapper().createObjectNode();
    root.put("netns", dp.thread().netns().orElse(null));
    root.put("priority", config.priority());
    root.put("ruleProtocol", config.ruleProtocol());
    ObjectNode table = root.putObject("nftTable");
    table.put("name", "inet " + EgressNftables.TABLE);
    table.put("present", observed.nft().tablePresent());
    table.put("intact", observed.nft().baseIntact());
    ArrayNode services = root.putArray("services");
    for (Map.Entry<String, Group> g : groups.entrySet()) {
      ObjectNode s = services.addObject();
      s.put("service", g.getKey());
      ArrayNode rules = s.putArray("rules");
      for (Rule r : g.getValue().rules()) {
        ObjectNode o = rules.addObject();
        o.put("family", r.family().iproute2Name());
        o.put("priority", r.priority());
        o.put("from", r.source().map(IpPrefix::toString).orElse(null));
        o.put("to", r.destination().map(IpPrefix::toString).orElse(null));
        o.put("table", Integer.toUnsignedLong(r.table()));
        r.sourcePort().ifPresent(p -> o.put("sport", p.toString()));
        if (r.fwmark().isPresent()) {
          o.put("fwmark", "0x" + Long.toHexString(r.fwmark().getAsLong()) + "/0x"
              + Long.toHexString(r.fwmask().orElse(0xffffffffL)));
        }
      }
      ArrayNode marks = s.putArray("marks");
      for (MarkElement m : g.getValue().marks()) {
        marks.addObject().put("family", m.family().iproute2Name()).put("source", m.source().toString())
            .put("table", m.table());
      }
      ArrayNode snat = s.putArray("snat");
      for (SnatElement e : g.getValue().snat()) {
        snat.addObject().put("family", e.family().iproute2Name()).put("source", e.source().toString())
            .put("to", e.target().toString());
      }
    }
    ArrayNode inCluster = root.putArray("inCluster");
    observed.nft().inCluster().forEach(r -> inCluster.add(r.toString()));
    return root;
  }
}
