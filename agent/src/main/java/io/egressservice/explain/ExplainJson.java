package io.egressservice.explain;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.egressservice.ip.IpPrefix;

/** {@code explain -o json}: field names are a contract (README, "explain"); add fields, never rename them. */
public final class ExplainJson {
  private ExplainJson() {}

  public static ObjectNode of(Explanation e) {
    KernelVerdict k = e.kernel();
    ObjectNode root = new ObjectMapper().createObjectNode();
    root.put("source", k.source().addressText());
    root.put("pod", e.api().pod().orElse(null));
    root.put("node", e.node());
    root.put("destination", k.destination().addressText());
    root.put("verdict", e.kind().json);
    root.put("sentence", e.sentence());
    ObjectNode kernel = root.putObject("kernel");
    kernel.put("podInterface", k.podInterface());
    kernel.put("mark", k.mark() == 0 ? null : "0x" + Long.toHexString(k.mark()));
    kernel.put("table", k.table());
    kernel.put("routeType", k.routeType());
    kernel.put("outputInterface", k.outputInterface());
    kernel.put("gateway", k.gateway().map(IpPrefix::addressText).orElse(null));
    kernel.put("rule", k.rule().orElse(null));
    if (k.ruleTable().isPresent()) {
      kernel.put("ruleTable", k.ruleTable().getAsLong());
    } else {
      kernel.putNull("ruleTable");
    }
    kernel.put("thrownBy", k.thrownBy().orElse(null));
    kernel.put("steeredTo", k.steeredTo().map(IpPrefix::addressText).orElse(null));
    kernel.put("steeredToNode", e.steeredToNode().orElse(null));
    kernel.put("snat", k.snat().map(IpPrefix::addressText).orElse(null));
    kernel.put("snatService", k.snatService().orElse(null));
    kernel.put("inCluster", k.inCluster());
    if (k.heldBy().isPresent()) {
      kernel.putObject("held").put("service", k.heldBy().get()).put("droppedPackets", k.heldDrops());
    } else {
      kernel.putNull("held");
    }
    kernel.putObject("guard").put("ours", k.guarded()).put("spoofedDrops", k.guardDrops());
    ArrayNode notes = kernel.putArray("notes");
    k.notes().forEach(notes::add);
    if (!e.apiAsked()) {
      root.putNull("api");
    } else {
      ObjectNode api = root.putObject("api");
      api.put("error", e.apiError().orElse(null));
      api.put("podNode", e.api().podNode().orElse(null));
      ArrayNode claims = api.putArray("claims");
      for (ApiClaims.Claim c : e.api().claims()) {
        ObjectNode o = claims.addObject();
        o.put("service", c.service());
        o.put("egressService", c.egressService());
        o.put("sourceIPBy", c.egressService() ? c.sourceIpBy() : null);
        o.put("network", c.network().orElse(null));
        o.put("host", c.host().orElse(null));
        ArrayNode lb = o.putArray("lbIPs");
        c.lbIps().forEach(lb::add);
        ArrayNode refusals = o.putArray("refusals");
        c.refusals().forEach(r -> reason(refusals.addObject(), r));
        ArrayNode events = o.putArray("events");
        c.reasons().forEach(r -> reason(events.addObject(), r));
      }
    }
    return root;
  }

  private static void reason(ObjectNode o, ApiClaims.Reason r) {
    o.put("type", r.type()).put("reason", r.reason()).put("message", r.message()).put("reporter", r.reporter())
        .put("lastSeen", r.lastSeen());
  }
}
