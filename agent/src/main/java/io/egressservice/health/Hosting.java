package io.egressservice.health;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;
import java.util.Optional;

/**
 * What an agent's {@code GET /hosting} answers: its node, and the EgressServices ({@code namespace/name}) whose
 * receiving side (SNAT of the endpoints other nodes steer to it, and their rules) its kernel holds after its last
 * successful reconcile, as their host or as the node their also-receive annotation names. The allocator reads it
 * before it moves a service's host in a planned move, so that the steering nodes switch only to a ready host.
 *
 * <p>Read-only and unauthenticated, like {@code /healthz} on the same port: it tells whoever can reach that port
 * which services this node hosts.
 */
public record Hosting(String node, List<String> receiving) {
  public static final String PATH = "/hosting";
  private static final ObjectMapper JSON = new ObjectMapper();

  public Hosting {
    receiving = receiving.stream().sorted().toList();
  }

  public String toJson() {
    ObjectNode o = JSON.createObjectNode();
    o.put("node", node);
    ArrayNode list = o.putArray("receiving");
    receiving.forEach(list::add);
    return o.toString() + "\n";
  }

  /** The answer, if {@code body} is one (anything else: empty, never an exception). */
  public static Optional<Hosting> parse(String body) {
    try {
      JsonNode o = JSON.readTree(body);
      if (o == null || !o.path("node").isTextual() || !o.path("receiving").isArray()) {
        return Optional.empty();
      }
      List<String> names = new java.util.ArrayList<>();
      for (JsonNode n : o.get("receiving")) {
        if (!n.isTextual()) {
          return Optional.empty();
        }
        names.add(n.asText());
      }
      return Optional.of(new Hosting(o.get("node").asText(), names));
    } catch (JsonProcessingException e) {
      return Optional.empty();
    }
  }
}
