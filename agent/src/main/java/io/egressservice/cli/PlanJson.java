package io.egressservice.cli;

import com.fasterxml.jackson.core.JsonFactoryBuilder;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.SerializableString;
import com.fasterxml.jackson.core.io.CharacterEscapes;
import com.fasterxml.jackson.core.io.SerializedString;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.egressservice.ip.IpPrefix;
import io.egressservice.plan.DesiredState;
import io.egressservice.plan.MarkEntry;
import io.egressservice.plan.RouteSpec;
import io.egressservice.model.RuleMode;
import io.egressservice.plan.RuleSpec;
import io.egressservice.plan.ServiceOutcome;
import io.egressservice.plan.SnatEntry;
import io.egressservice.plan.SteerRoute;
import io.egressservice.plan.SteeredEndpoint;
import io.egressservice.plan.SteeringPlan;
import io.egressservice.plan.TableRef;
import io.egressservice.text.Printable;

/**
 * {@code plan --output json}: the shape of DESIGN.md section 4 (fields may be added, never renamed).
 * {@code table} is a number, or the network's name when an offline plan could not resolve it.
 *
 * <p>Every JSON output of the command line ({@code plan}, {@code status}, {@code explain}) is written here: strings
 * carry what others wrote, so besides JSON's own escapes (every C0 control) DEL, the C1 controls and the characters
 * {@link Printable} escapes (line separators, bidirectional overrides) are written as {@code \}{@code uHHHH}: the
 * same string to a parser, nothing a terminal acts on when a person reads the JSON.
 */
public final class PlanJson {
  private static final ObjectMapper MAPPER = new ObjectMapper(
      new JsonFactoryBuilder().characterEscapes(new TerminalSafeEscapes()).build()).enable(SerializationFeature.INDENT_OUTPUT);

  /** JSON's escapes, and {@code \}{@code uHHHH} for DEL and every non-ASCII character {@link Printable} escapes. */
  private static final class TerminalSafeEscapes extends CharacterEscapes {
    private static final long serialVersionUID = 1L;
    private final int[] ascii;

    TerminalSafeEscapes() {
      ascii = standardAsciiEscapesForJSON();
      ascii[0x7f] = ESCAPE_STANDARD;
    }

    @Override
    public int[] getEscapeCodesForAscii() {
      return ascii;
    }

    @Override
    public SerializableString getEscapeSequence(int ch) {
      return Printable.escapes((char) ch) && !Character.isSurrogate((char) ch)
          ? new SerializedString(String.format("\\u%04x", ch)) : null;
    }
  }

  private PlanJson() {}

  public static String render(DesiredState s) {
    return write(toJson(s));
  }

  public static ObjectNode toJson(DesiredState s) {
    ObjectNode root = MAPPER.createObjectNode();
    root.put("node", s.node());
    ArrayNode rules = root.putArray("rules");
    for (RuleSpec r : s.rules()) {
      ObjectNode o = rules.addObject();
      o.put("family", r.family().iproute2Name());
      o.put("priority", r.priority());
      o.put("from", r.from().map(IpPrefix::toString).orElse(null));
      o.put("to", r.to().map(IpPrefix::toString).orElse(null));
      putTable(o, r.table());
      o.put("service", r.service().map(Object::toString).orElse(null));
      r.sourcePort().ifPresent(port -> o.put("sport", port));
      if (r.fwmark().isPresent()) {
        o.put("fwmark", "0x" + Long.toHexString(r.fwmark().getAsLong()) + "/0x" + Long.toHexString(s.markMask()));
      }
    }
    if (s.ruleMode() == RuleMode.MARK) {
      ArrayNode marks = root.putArray("marks");
      for (MarkEntry m : s.marks()) {
        ObjectNode o = marks.addObject();
        o.put("family", m.family().iproute2Name());
        o.put("source", m.source().toString());
        o.put("table", m.table());
        o.put("mark", "0x" + Long.toHexString(m.mark()));
        o.put("service", m.service().toString());
      }
    }
    ArrayNode snat = root.putArray("snat");
    for (SnatEntry e : s.snat()) {
      ObjectNode o = snat.addObject();
      o.put("family", e.family().iproute2Name());
      o.put("source", e.source().toString());
      o.put("to", e.to().toString());
      o.put("service", e.service().toString());
    }
    ArrayNode inCluster = root.putArray("inCluster");
    s.inCluster().forEach(p -> inCluster.add(p.toString()));
    ArrayNode routes = root.putArray("routes");
    for (RouteSpec r : s.routes()) {
      ObjectNode o = routes.addObject();
      o.put("family", r.family().iproute2Name());
      o.put("type", "throw");
      o.put("to", r.to().toString());
      putTable(o, r.table());
    }
    ArrayNode refused = root.putArray("refusedInputs");
    s.refusedInputs().forEach(refused::add);
    ArrayNode services = root.putArray("services");
    for (ServiceOutcome so : s.services()) {
      ObjectNode o = services.addObject();
      o.put("service", so.service().toString());
      o.put("configured", so.configured());
      o.put("reason", so.reason());
      ArrayNode skipped = o.putArray("skippedEndpoints");
      for (ServiceOutcome.SkippedEndpoint se : so.skippedEndpoints()) {
        skipped.addObject().put("address", se.address()).put("reason", se.reason());
      }
      ArrayNode remote = o.putArray("remoteEndpoints");
      so.remoteEndpoints().forEach(remote::add);
      ArrayNode steered = o.putArray("steeredEndpoints");
      so.steeredEndpoints().forEach(e -> steered.add(e.source().toString()));
      ArrayNode steeredIn = o.putArray("steeredIn");
      so.steeredIn().forEach(steeredIn::add);
      ArrayNode warnings = o.putArray("warnings");
      so.warnings().forEach(warnings::add);
    }
    ArrayNode steering = root.putArray("steering");
    for (SteeredEndpoint e : s.steering().endpoints()) {
      ObjectNode o = steering.addObject();
      o.put("service", e.service().toString());
      o.put("source", e.source().toString());
      o.put("host", e.host());
      o.put("hostAddress", e.hostAddress().toString());
      o.put("family", e.family().iproute2Name());
      o.put("table", e.table());
    }
    ArrayNode steeringRoutes = root.putArray("steeringRoutes");
    for (SteerRoute r : s.steering().routes()) {
      steeringRoutes.addObject().put("family", r.family().iproute2Name()).put("table", r.table()).put("host", r.host())
          .put("hostAddress", r.hostAddress().toString());
    }
    ObjectNode device = root.putObject("steeringDevice");
    device.put("name", SteeringPlan.DEVICE);
    device.put("wanted", s.steering().deviceWanted());
    device.put("port", s.steering().port());
    // Who may send to that port (the guard table); an addition, the fields above keep their names.
    ObjectNode peers = root.putObject("steeringPeers");
    peers.put("enforced", s.steering().peers().steers());
    ArrayNode internal = peers.putArray("nodeInternalIps");
    s.steering().peers().nodeInternalIps().forEach(p -> internal.add(p.toString()));
    ArrayNode addresses = peers.putArray("nodeAddresses");
    s.steering().peers().nodeAddresses().forEach(p -> addresses.add(p.toString()));
    root.put("priority", s.priority());
    root.put("ruleProtocol", s.ruleProtocol());
    root.put("ruleMode", s.ruleMode().flag());
    return root;
  }

  private static void putTable(ObjectNode o, TableRef t) {
    if (t.id().isPresent()) {
      o.put("table", t.id().getAsLong());
    } else {
      o.put("table", t.name());
    }
  }

  static String write(Object node) {
    try {
      return MAPPER.writeValueAsString(node);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot write JSON", e);
    }
  }
}
