package io.egressservice.explain;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The agent's view as {@code status} and {@code explain} print it: text lines (unescaped: the caller prints them
 * through {@code Printable}) and the {@code agentView} JSON object (fields are a contract: add, never rename).
 */
public final class AgentViewOutput {
  private AgentViewOutput() {}

  public static List<String> text(AgentView view) {
    List<String> lines = new ArrayList<>();
    String heading = "agent's view of the API (its metrics at " + view.source() + "): ";
    if (view instanceof AgentView.Unknown u) {
      lines.add(heading + "unknown: " + u.why());
      return List.copyOf(lines);
    }
    AgentView.Answered a = (AgentView.Answered) view;
    lines.add(heading + (a.ready() ? "ready" : "NOT ready (" + a.readiness() + "): the kernel keeps what was last"
        + " applied, which may be older than the API's objects") + "; " + seconds(a.ageSeconds()) + " old");
    List<String> down = a.watches().stream().filter(w -> !w.up())
        .map(w -> w.kind() + " (last established " + seconds(w.lastContactAgeSeconds()) + " ago)").toList();
    lines.add("  watches up: " + a.watchesUp() + " of " + a.watches().size() + " kinds"
        + (down.isEmpty() ? "" : "; down: " + String.join(", ", down)));
    a.idleSeconds().entrySet().stream().max(Map.Entry.comparingByValue()).ifPresent(idle ->
        lines.add("  longest-idle watch: " + (idle.getKey().isBlank() ? "" : idle.getKey() + ", ") + "no frame for "
            + seconds(idle.getValue())));
    lines.add("  kernel last checked against fresh objects: " + (a.freshKernelCheckAgeSeconds().isPresent()
        ? seconds(a.freshKernelCheckAgeSeconds().getAsDouble()) + " ago" : "never since the agent started"));
    lines.add("  reconcile work waiting: " + (a.pendingTriggers() == 0 ? "none" : a.pendingTriggers()
        + " trigger(s), the oldest for " + seconds(a.pendingOldestSeconds())));
    return List.copyOf(lines);
  }

  public static ObjectNode json(AgentView view) {
    ObjectNode o = new ObjectMapper().createObjectNode();
    o.put("source", view.source());
    if (view instanceof AgentView.Unknown u) {
      o.put("answered", false);
      o.put("error", u.why());
      return o;
    }
    AgentView.Answered a = (AgentView.Answered) view;
    o.put("answered", true);
    o.put("ready", a.ready());
    o.put("readiness", a.readiness());
    o.put("ageSeconds", round(a.ageSeconds()));
    var watches = o.putArray("watches");
    a.watches().forEach(w -> watches.addObject().put("kind", w.kind()).put("up", w.up())
        .put("lastContactAgeSeconds", round(w.lastContactAgeSeconds())));
    var idle = o.putArray("idleWatches");
    a.idleSeconds().forEach((resource, seconds) -> idle.addObject().put("resource", resource)
        .put("idleSeconds", round(seconds)));
    if (a.freshKernelCheckAgeSeconds().isPresent()) {
      o.put("freshKernelCheckAgeSeconds", round(a.freshKernelCheckAgeSeconds().getAsDouble()));
    } else {
      o.putNull("freshKernelCheckAgeSeconds");
    }
    o.put("pendingTriggers", a.pendingTriggers());
    o.put("pendingOldestSeconds", round(a.pendingOldestSeconds()));
    return o;
  }

  private static String seconds(double s) {
    return String.format(Locale.ROOT, "%.1f s", s);
  }

  private static double round(double s) {
    return Math.round(s * 10) / 10.0;
  }
}
