package io.egressservice.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.egressservice.dataplane.Dataplane;
import io.egressservice.dataplane.DataplaneException;
import io.egressservice.dataplane.ObservedState;
import io.egressservice.explain.ApiClaims;
import io.egressservice.ip.IpPrefix;
import io.egressservice.netlink.Route;
import io.egressservice.netlink.Rule;
import io.egressservice.nft.EgressNftables;
import io.egressservice.nft.EgressNftables.SnatElement;
import io.egressservice.nft.MarkNftables.MarkElement;
import io.egressservice.nft.ServiceComments;
import io.egressservice.objects.ClusterObjects;
import io.egressservice.plan.DesiredState;
import io.egressservice.model.PlanConfig;
import io.egressservice.plan.RuleSpec;
import io.egressservice.text.Printable;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code status}: the owned kernel state, grouped by service. Every text line is {@linkplain Printable#escape
 * escaped}: service names, hosts and Event messages come from the API or the kernel's comments.
 */
@Command(name = "status", mixinStandardHelpOptions = true,
    description = {"Show the owned ip rules, throw routes and nft SNAT entries, grouped by service. Every rule is"
        + " named by its service (endpoint or ClusterIP) from the objects: --objects files, else the API (in cluster,"
        + " or with --kubeconfig) when this node's name is known; without them, rules without an SNAT entry are"
        + " grouped by table."},
    footer = {"%nExamples:",
        "  egress-service-agent status                          (in the agent pod: named from the API)",
        "  egress-service-agent status -o json --netns node-b",
        "  egress-service-agent status --objects cluster.yaml --node node-b",
        "  kubectl egress-service status node-b                 (the kubectl plugin)"})
public final class StatusCommand implements Callable<Integer> {
  static final String IN_CLUSTER = "(in-cluster)";

  @Mixin NetnsOption netns;

  @Mixin PlanOptions planOptions;

  @Mixin AgentViewOption agentView;

  @Option(names = {"-o", "--output"}, defaultValue = "text", description = "text or json (default ${DEFAULT-VALUE}).")
  String output;

  @Option(names = "--objects", arity = "1..*", paramLabel = "PATH",
      description = "Optional: the cluster's objects, to name the services of rules that have no SNAT entry.")
  List<Path> objects = new ArrayList<>();

  @FromEnvironment
  @Option(names = {"--node", "--node-name"},
      description = "With --objects: this node's name (--node-name as on run).")
  String node;

  @FromEnvironment
  @Option(names = "--kubeconfig", paramLabel = "FILE",
      description = "The API that names the rules when no --objects are given (default: in cluster, the pod's"
          + " service account).")
  Path kubeconfig;

  @Option(names = "--no-api", description = "Do not ask the API: name rules from the kernel (and --objects) only.")
  boolean noApi;

  @Spec CommandSpec spec;

  @Override
  public Integer call() {
    if (!output.equals("text") && !output.equals("json")) {
      throw new Main.UserError("--output must be text or json, not '" + output + "'");
    }
    java.util.Optional<java.net.URI> agentViewAt = agentView.uri(); // a bad --agent-metrics is refused before anything is read
    if (!objects.isEmpty() && (node == null || node.isBlank())) {
      throw new Main.UserError("--objects needs --node (or EGRESS_AGENT_NODE_NAME) to plan for this node");
    }
    PlanConfig config = planOptions.toConfig();
    java.util.Optional<FromApi> api = objects.isEmpty() ? fromApi() : java.util.Optional.empty();
    ClusterObjects loaded = objects.isEmpty() ? api.map(FromApi::objects).orElse(null)
        : PlanCommand.loadObjects(objects, spec.commandLine().getErr());
    // each EgressService's last change and why (its newest Event), when the API was read
    Map<String, ApiClaims.Reason> lastChanges = api.map(FromApi::lastChanges).orElse(Map.of());
    if (loaded != null && !objects.isEmpty()) {
      PlanCommand.warnIfUnknownNode(loaded, node, spec.commandLine().getErr());
    }
    java.util.Optional<io.egressservice.explain.AgentView> view = agentViewAt.map(AgentViewOption::read);
    PrintWriter out = spec.commandLine().getOut();
    try (Dataplane dp = KernelAccess.open(netns.value(), config.priority(), config.ruleProtocol())) {
      ObservedState observed = dp.observe();
      Map<IpPrefix, String> names = new HashMap<>();
      Map<IpPrefix, String> hosts = new HashMap<>();
      // each EgressService's status.host, as the objects give it
      Map<String, String> serviceHosts = new TreeMap<>();
      // A comment is the service's name unless that is too long for nft (ServiceComments); the plan's
      // services map such comments back to their names.
      Map<String, String> serviceByComment = new HashMap<>();
      if (loaded != null) {
        DesiredState plan = KernelPlan.of(dp, loaded, node, config).desired();
        for (RuleSpec r : plan.rules()) {
          if (r.from().isPresent() && r.service().isPresent()) {
            names.put(r.from().get(), r.service().get().toString());
          }
        }
        plan.steering().routes().forEach(r -> hosts.put(r.hostAddress(), r.host()));
        plan.services().forEach(o -> serviceByComment.put(ServiceComments.of(o.service()), o.service().toString()));
        for (org.ovn.k8s.v1.EgressService es : loaded.egressServices()) {
          if (es.getStatus() != null && es.getStatus().getHost() != null && !es.getStatus().getHost().isEmpty()) {
            serviceHosts.put(es.getMetadata().getNamespace() + "/" + es.getMetadata().getName(), es.getStatus().getHost());
          }
        }
      }
      observed.nft().snat().forEach(e -> names.put(e.source(), serviceByComment.getOrDefault(e.comment(), e.comment())));
      Map<String, Group> groups = group(observed, names, serviceByComment);
      Steered steered = new Steered(config, observed, hosts);
      List<io.egressservice.explain.HeldSources> held = held(dp, serviceByComment);
      if (output.equals("json")) {
        ObjectNode root = json(dp, config, observed, groups, steered, serviceHosts, lastChanges);
        ArrayNode heldJson = root.putArray("held");
        for (var h : held) {
          ObjectNode o = heldJson.addObject().put("service", h.service()).put("droppedPackets", h.droppedPackets());
          h.sources().forEach(o.putArray("sources")::add);
          lastChangeJson(o, lastChanges.get(h.service()));
        }
        view.ifPresent(v -> root.set("agentView", io.egressservice.explain.AgentViewOutput.json(v)));
        out.println(PlanJson.write(root)); // JSON: its strings escape every control character
      } else {
        text(out, dp, config, observed, groups, steered, serviceHosts, lastChanges);
        for (var h : held) {
          Printable.println(out, "held (no host: packets out of the cluster dropped, " + h.droppedPackets() + " so far): "
              + h.service() + ": " + String.join(", ", h.sources()));
          if (lastChanges.containsKey(h.service())) {
            Printable.println(out, "  " + lastChangeText(lastChanges.get(h.service())));
          }
        }
      }
      long unnamed = groups.values().stream().filter(g -> g.table().isPresent()).mapToLong(g -> g.rules().size()).sum();
      if (unnamed > 0 && output.equals("text") && loaded != null) {
        Printable.println(out, "note: " + unnamed + " rule(s) are of no service in the objects read (left over, or of a"
            + " service the objects do not hold), so they are grouped by table");
      } else if (unnamed > 0 && output.equals("text")) {
        Printable.println(out, "note: " + unnamed + " rule(s) have no SNAT entry to name their service (ClusterIPs and the"
            + " endpoints of sourceIPBy Network services never have one), so they are grouped by table;"
            + " give --objects PATH... --node NODE to name them (or run it where it reaches the API: in cluster, or"
            + " with --kubeconfig, with --node NODE)");
      }
      if (output.equals("text")) {
        view.ifPresent(v -> io.egressservice.explain.AgentViewOutput.text(v).forEach(l -> Printable.println(out, l)));
      }
      out.flush();
      return Main.EXIT_OK;
    } catch (DataplaneException e) {
      throw new Main.SystemError(e.getMessage(), e);
    }
  }

  /** The no-host table's held sources per service (named as the groups are); an unreadable table holds none. */
  private static List<io.egressservice.explain.HeldSources> held(Dataplane dp, Map<String, String> serviceByComment) {
    try (io.egressservice.kernel.Nftables nft = dp.kernel().openNftables()) {
      return io.egressservice.explain.HeldSources.read(nft).stream()
          .map(h -> new io.egressservice.explain.HeldSources(serviceByComment.getOrDefault(h.service(), h.service()),
              h.sources(), h.droppedPackets()))
          .toList();
    } catch (io.egressservice.kernel.NftException e) {
      return List.of();
    }
  }

  /**
   * The objects from the API when no --objects are given and the API is at hand (in cluster, or --kubeconfig) and
   * this node's name is known; else null: status then names what the kernel alone names. An API that cannot be
   * read is one line on stderr, not a failure: the kernel's state is what status is for.
   */
  private java.util.Optional<FromApi> fromApi() {
    if (noApi || !KubeClients.givenOrInCluster(kubeconfig)) {
      return java.util.Optional.empty();
    }
    PrintWriter err = spec.commandLine().getErr();
    if (node == null || node.isBlank()) {
      err.println("note: the API is at hand but this node's name is not (--node or EGRESS_AGENT_NODE_NAME):"
          + " rules are named from the kernel only");
      err.flush();
      return java.util.Optional.empty();
    }
    try (io.fabric8.kubernetes.client.KubernetesClient client = KubeClients.create(kubeconfig)) {
      io.egressservice.explain.ApiInspector inspector = new io.egressservice.explain.ApiInspector(client);
      ClusterObjects loaded = inspector.objects();
      PlanCommand.warnIfUnknownNode(loaded, node, err);
      return java.util.Optional.of(new FromApi(loaded, inspector.lastChanges(loaded)));
    } catch (io.egressservice.explain.ExplainException | io.fabric8.kubernetes.client.KubernetesClientException e) {
      Printable.println(err, "note: the API could not be read, rules are named from the kernel only: " + e.getMessage());
      err.flush();
      return java.util.Optional.empty();
    }
  }

  /** What the API gave: the objects that name the rules, and each EgressService's last change and why. */
  private record FromApi(ClusterObjects objects, Map<String, ApiClaims.Reason> lastChanges) {}

  /** "last change 2026-12-05T14:40:00Z: EgressConfigured by node-a: ..." (a Warning says so). */
  static String lastChangeText(ApiClaims.Reason r) {
    return "last change " + r.lastSeen() + ": " + r.reason() + (r.type().equals("Normal") ? "" : " (" + r.type() + ")")
        + (r.reporter().isEmpty() ? "" : " by " + r.reporter()) + (r.message().isEmpty() ? "" : ": " + r.message());
  }

  /** {@code lastChange: {time, type, reason, message, reporter}} when there is one (a field added, none renamed). */
  private static void lastChangeJson(ObjectNode service, ApiClaims.Reason r) {
    if (r != null) {
      service.putObject("lastChange").put("time", r.lastSeen()).put("type", r.type()).put("reason", r.reason())
          .put("message", r.message()).put("reporter", r.reporter());
    }
  }

  /**
   * What status shows under one heading.
   *
   * @param named whether the heading is a service's name (from an SNAT or mark comment, or the plan),
   *     rather than what the kernel alone can tell: the table, or the in-cluster exemptions
   * @param table for rules the kernel cannot attribute, the table they route to
   */
  private record Group(boolean named, OptionalLong table, List<Rule> rules, List<SnatElement> snat,
      List<MarkElement> marks) {
    static Group forService() {
      return new Group(true, OptionalLong.empty(), new ArrayList<>(), new ArrayList<>(), new ArrayList<>());
    }

    static Group unattributed(OptionalLong table) {
      return new Group(false, table, new ArrayList<>(), new ArrayList<>(), new ArrayList<>());
    }
  }

  /**
   * Service rules whose source has no SNAT entry (a ClusterIP, an endpoint of a sourceIPBy Network
   * service) cannot be named from the kernel: they are grouped by table, with the services whose
   * SNAT entries route into the same table as a hint, never as a claim.
   */
  private static String unnamedKey(long table, Map<Long, SortedSet<String>> servicesByTable) {
    SortedSet<String> sharing = servicesByTable.getOrDefault(table, new TreeSet<>());
    return "(table " + table + ": sources the kernel does not name"
        + (sharing.isEmpty() ? "" : "; " + String.join(", ", sharing) + " also route" + (sharing.size() == 1 ? "s" : "")
            + " to this table")
        + ")";
  }

  /**
   * Where the steering tables lead (from the owned routes: table to host address per family), so a
   * source's rule or mark into a steering table reads as "steered to that host".
   */
  private record Steered(PlanConfig config, Map<String, IpPrefix> byTableAndFamily, Map<IpPrefix, String> hosts) {
    Steered(PlanConfig config, ObservedState observed, Map<IpPrefix, String> hosts) {
      this(config, new HashMap<>(), hosts);
      for (var r : observed.steering().routes()) {
        r.encap().ifPresent(e -> byTableAndFamily.put(Integer.toUnsignedLong(r.table()) + "/" + r.family(), e.destination()));
      }
    }

    /** "192.168.1.10 (host node-a)" for a source of {@code family} routed to {@code table}, or empty. */
    java.util.Optional<String> describe(long table, io.egressservice.ip.IpFamily family) {
      if (!config.steering().isSteeringTable(table)) {
        return java.util.Optional.empty();
      }
      IpPrefix to = byTableAndFamily.get(table + "/" + family);
      if (to == null) {
        return java.util.Optional.of("nowhere yet: table " + table + " has no route over "
            + io.egressservice.plan.SteeringPlan.DEVICE);
      }
      return java.util.Optional.of(to + java.util.Optional.ofNullable(hosts.get(to)).map(h -> " (host " + h + ")").orElse(""));
    }

    java.util.Optional<IpPrefix> address(long table, io.egressservice.ip.IpFamily family) {
      return java.util.Optional.ofNullable(byTableAndFamily.get(table + "/" + family));
    }
  }

  private static Map<String, Group> group(ObservedState observed, Map<IpPrefix, String> names,
      Map<String, String> serviceByComment) {
    Map<String, Group> groups = new TreeMap<>();
    List<Rule> rules = new ArrayList<>(observed.rules());
    rules.sort(Comparator.comparing(Rule::family).thenComparingInt(Rule::priority)
        .thenComparing(r -> r.source().orElse(null), Comparator.nullsFirst(Comparator.naturalOrder()))
        .thenComparing(r -> r.destination().orElse(null), Comparator.nullsFirst(Comparator.naturalOrder())));
    Map<Long, SortedSet<String>> servicesByTable = new HashMap<>();
    for (Rule r : rules) {
      if (r.source().isPresent() && names.containsKey(r.source().get())) {
        servicesByTable.computeIfAbsent(Integer.toUnsignedLong(r.table()), t -> new TreeSet<>())
            .add(names.get(r.source().get()));
      }
    }
    for (Rule r : rules) {
      long table = Integer.toUnsignedLong(r.table());
      if (r.source().isPresent() && !names.containsKey(r.source().get())) {
        groups.computeIfAbsent(unnamedKey(table, servicesByTable), k -> Group.unattributed(OptionalLong.of(table)))
            .rules().add(r);
        continue;
      }
      String key = r.source().map(names::get)
          .orElse(r.destination().isEmpty() && r.fwmark().isPresent()
              ? "(network " + table + ": the sources marked for it)" : IN_CLUSTER);
      groups.computeIfAbsent(key, k -> r.source().isPresent() ? Group.forService() : Group.unattributed(OptionalLong.empty()))
          .rules().add(r);
    }
    List<MarkElement> marks = new ArrayList<>(observed.marks().elements().values());
    marks.sort(Comparator.comparing(MarkElement::source));
    for (MarkElement m : marks) {
      groups.computeIfAbsent(serviceByComment.getOrDefault(m.comment(), m.comment()), k -> Group.forService())
          .marks().add(m);
    }
    List<SnatElement> snat = new ArrayList<>(observed.nft().snat());
    snat.sort(Comparator.comparing(SnatElement::source));
    for (SnatElement e : snat) {
      groups.computeIfAbsent(serviceByComment.getOrDefault(e.comment(), e.comment()), k -> Group.forService())
          .snat().add(e);
    }
    return groups;
  }

  private static void text(PrintWriter out, Dataplane dp, PlanConfig config, ObservedState observed,
      Map<String, Group> groups, Steered steered, Map<String, String> serviceHosts,
      Map<String, ApiClaims.Reason> lastChanges) {
    EgressNftables.NftState nft = observed.nft();
    Printable.println(out, String.format("owned state in %s: %d ip rule(s) at priority %d/%d and %d throw route(s)"
            + " with protocol %d; nft table inet %s: %s",
        dp.describe(), observed.rules().size(), config.priority(), config.priority() - 1, observed.routes().size(),
        config.ruleProtocol(),
        EgressNftables.TABLE,
        !nft.tablePresent() ? "absent" : nft.baseIntact() ? "present, " + nft.snat().size() + " SNAT entr"
            + (nft.snat().size() == 1 ? "y" : "ies") : "present but NOT intact (the next apply repairs it)"));
    var dev = observed.steering();
    Printable.println(out, "steering device " + io.egressservice.plan.SteeringPlan.DEVICE + ": " + (dev.device().isEmpty() ? "absent"
        : dev.deviceForeign() ? "present but NOT the agent's (no alias " + io.egressservice.plan.SteeringPlan.DEVICE_ALIAS
            + "): never touched, nothing is steered"
        : "present, mtu " + dev.device().get().mtu() + dev.device().get().vxlan().map(v -> ", dstport " + v.port()).orElse("")
            + ", " + dev.routes().size() + " steering route(s)"));
    for (Map.Entry<String, Group> g : groups.entrySet()) {
      Printable.println(out, g.getKey());
      for (Rule r : g.getValue().rules()) {
        Printable.println(out, "  rule " + r + clusterIpHint(config, r));
        if (r.source().isPresent()) {
          steered.describe(Integer.toUnsignedLong(r.table()), r.family())
              .ifPresent(d -> Printable.println(out, "    steered " + r.source().get() + " to " + d));
        }
      }
      for (MarkElement m : g.getValue().marks()) {
        Printable.println(out, "  mark " + m.source() + " -> table " + m.table()
            + " (fwmark 0x" + Long.toHexString(observed.marks().networkChains().getOrDefault(m.table(), 0L)) + ")");
        steered.describe(m.table(), m.family()).ifPresent(d -> Printable.println(out, "    steered " + m.source() + " to " + d));
      }
      g.getValue().snat().forEach(e -> Printable.println(out, "  snat " + e.source() + " -> " + e.target()));
      // last, so the heading is still followed by its rules, as scripts reading the text expect
      if (serviceHosts.containsKey(g.getKey())) {
        Printable.println(out, "  host " + serviceHosts.get(g.getKey()));
      }
      if (lastChanges.containsKey(g.getKey())) {
        Printable.println(out, "  " + lastChangeText(lastChanges.get(g.getKey())));
      }
    }
    if (!observed.routes().isEmpty()) {
      Printable.println(out, "in-cluster destinations thrown back from the service tables:");
      sortedRoutes(observed).forEach(r -> Printable.println(out, "  route " + routeText(r)));
    }
    if (!nft.inCluster().isEmpty()) {
      Printable.println(out, "in-cluster destinations (never SNATed): "
          + String.join(", ", nft.inCluster().stream().map(Object::toString).toList()));
    }
  }

  /** What --service-cidr lets status say about a source without objects: that it is a ClusterIP. */
  private static String clusterIpHint(PlanConfig config, Rule r) {
    return isClusterIp(config, r) ? "  (a ClusterIP: in --service-cidr)" : "";
  }

  private static boolean isClusterIp(PlanConfig config, Rule r) {
    return r.source().isPresent() && config.serviceCidrs().stream().anyMatch(c -> c.contains(r.source().get()));
  }

  private static ObjectNode json(Dataplane dp, PlanConfig config, ObservedState observed, Map<String, Group> groups,
      Steered steered, Map<String, String> serviceHosts, Map<String, ApiClaims.Reason> lastChanges) {
    ObjectNode root = new ObjectMapper().createObjectNode();
    root.put("netns", dp.kernel().netns().orElse(null));
    root.put("priority", config.priority());
    root.put("ruleProtocol", config.ruleProtocol());
    ObjectNode table = root.putObject("nftTable");
    table.put("name", "inet " + EgressNftables.TABLE);
    table.put("present", observed.nft().tablePresent());
    table.put("intact", observed.nft().baseIntact());
    ObjectNode device = root.putObject("steeringDevice");
    device.put("name", io.egressservice.plan.SteeringPlan.DEVICE);
    device.put("present", observed.steering().device().isPresent());
    device.put("ours", observed.steering().deviceOurs());
    observed.steering().device().filter(d -> observed.steering().deviceOurs()).ifPresent(d -> {
      device.put("mtu", d.mtu());
      d.vxlan().ifPresent(v -> device.put("port", v.port()));
    });
    ArrayNode services = root.putArray("services");
    for (Map.Entry<String, Group> g : groups.entrySet()) {
      ObjectNode s = services.addObject();
      s.put("service", g.getKey());
      s.put("named", g.getValue().named());
      if (serviceHosts.containsKey(g.getKey())) {
        s.put("host", serviceHosts.get(g.getKey()));
      }
      lastChangeJson(s, lastChanges.get(g.getKey()));
      g.getValue().table().ifPresent(t -> s.put("table", t));
      ArrayNode rules = s.putArray("rules");
      for (Rule r : g.getValue().rules()) {
        ObjectNode o = rules.addObject();
        o.put("family", r.family().iproute2Name());
        o.put("priority", r.priority());
        o.put("from", r.source().map(IpPrefix::toString).orElse(null));
        o.put("to", r.destination().map(IpPrefix::toString).orElse(null));
        o.put("table", Integer.toUnsignedLong(r.table()));
        r.sourcePort().ifPresent(p -> o.put("sport", p.toString()));
        if (isClusterIp(config, r)) {
          o.put("clusterIP", true);
        }
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
      ArrayNode steeredOut = s.putArray("steered");
      for (Rule r : g.getValue().rules()) {
        long t = Integer.toUnsignedLong(r.table());
        if (r.source().isPresent() && config.steering().isSteeringTable(t)) {
          steeredJson(steeredOut, steered, r.source().get(), t);
        }
      }
      for (MarkElement m : g.getValue().marks()) {
        if (config.steering().isSteeringTable(m.table())) {
          steeredJson(steeredOut, steered, m.source(), m.table());
        }
      }
      ArrayNode snat = s.putArray("snat");
      for (SnatElement e : g.getValue().snat()) {
        snat.addObject().put("family", e.family().iproute2Name()).put("source", e.source().toString())
            .put("to", e.target().toString());
      }
    }
    ArrayNode inCluster = root.putArray("inCluster");
    observed.nft().inCluster().forEach(r -> inCluster.add(r.toString()));
    ArrayNode routes = root.putArray("routes");
    for (Route r : sortedRoutes(observed)) {
      routes.addObject().put("family", r.family().iproute2Name()).put("type", "throw")
          .put("to", r.destination().map(IpPrefix::toString).orElse("default"))
          .put("table", Integer.toUnsignedLong(r.table()));
    }
    return root;
  }

  /**
   * A route as {@code ip route} writes it: the kernel reports an IPv6 throw route with the loopback device and
   * the default metric 1024, which say nothing about it ({@code dev #1 ... metric 1024}), so a throw route is
   * written without them.
   */
  static String routeText(Route r) {
    if (r.type() != io.egressservice.netlink.RouteType.THROW) {
      return r.toString();
    }
    return new Route(r.family(), r.table(), r.type(), r.destination(), java.util.Optional.empty(),
        java.util.OptionalInt.empty(), r.protocol(), java.util.OptionalInt.empty()).toString();
  }

  private static List<Route> sortedRoutes(ObservedState observed) {
    List<Route> routes = new ArrayList<>(observed.routes());
    routes.sort(Comparator.comparing(Route::family).thenComparingLong(r -> Integer.toUnsignedLong(r.table()))
        .thenComparing(r -> r.destination().orElse(null), Comparator.nullsFirst(Comparator.naturalOrder())));
    return routes;
  }

  private static void steeredJson(ArrayNode out, Steered steered, IpPrefix source, long table) {
    ObjectNode o = out.addObject();
    o.put("family", source.family().iproute2Name());
    o.put("source", source.toString());
    o.put("table", table);
    IpPrefix to = steered.address(table, source.family()).orElse(null);
    o.put("hostAddress", to == null ? null : to.toString());
    o.put("host", to == null ? null : steered.hosts().get(to));
  }
}
