package io.egressservice.objects;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.egressservice.ip.IpPrefix;
import io.egressservice.plan.Grant;
import io.egressservice.plan.GrantPolicy;
import io.egressservice.plan.LabelMatcher;
import io.egressservice.plan.NamespaceInfo;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.Namespace;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The EgressServicePolicy (group {@value #API_VERSION}) and Namespaces to the plan's {@link GrantPolicy} and
 * {@link NamespaceInfo}. Tolerant, as {@link MalformedEgressService} is for EgressServices: OVN-Kubernetes' clusters
 * need not have our CRD's schema installed, and a policy that does not read is refused alone, granting nothing
 * (fail closed) with a message that names the field, never a crashed agent or allocator.
 */
public final class PolicyDecoding {
  public static final String API_VERSION = "egressservice.io/v1alpha1";
  public static final String KIND = "EgressServicePolicy";
  public static final String GROUP = "egressservice.io";
  public static final String VERSION = "v1alpha1";
  public static final String PLURAL = "egressservicepolicies";

  private static final ObjectMapper MAPPER = new ObjectMapper();

  private PolicyDecoding() {}

  /** The policy an object holds (not enforced yet: the flag decides). */
  public static GrantPolicy policy(GenericKubernetesResource policy) {
    Object spec = policy.getAdditionalProperties().get("spec");
    return policy(spec == null ? MAPPER.missingNode() : MAPPER.valueToTree(spec));
  }

  /** The policy a {@code spec} holds; missing or null: no grants. */
  public static GrantPolicy policy(JsonNode spec) {
    try {
      return GrantPolicy.of(grants(spec));
    } catch (Invalid e) {
      return GrantPolicy.unreadable(e.getMessage());
    }
  }

  public static NamespaceInfo namespace(Namespace ns) {
    return new NamespaceInfo(ns.getMetadata().getName(), ns.getMetadata().getLabels());
  }

  private static final class Invalid extends Exception {
    private static final long serialVersionUID = 1L;

    Invalid(String message) {
      super(message);
    }
  }

  private static List<Grant> grants(JsonNode spec) throws Invalid {
    if (spec.isMissingNode() || spec.isNull()) {
      return List.of();
    }
    if (!spec.isObject()) {
      throw new Invalid("spec is not an object");
    }
    JsonNode grants = spec.path("grants");
    if (grants.isMissingNode() || grants.isNull()) {
      return List.of();
    }
    if (!grants.isArray()) {
      throw new Invalid("spec.grants is not a list");
    }
    List<Grant> out = new ArrayList<>();
    int i = 0;
    for (JsonNode g : grants) {
      out.add(grant("spec.grants[" + i++ + "]", g));
    }
    return out;
  }

  private static Grant grant(String at, JsonNode g) throws Invalid {
    if (!g.isObject()) {
      throw new Invalid(at + " is not an object");
    }
    JsonNode selector = g.path("namespaceSelector");
    if (!selector.isObject()) {
      throw new Invalid(at + ".namespaceSelector is required (an object; {} selects every namespace)");
    }
    List<String> networks = strings(at + ".networks", g.path("networks"));
    JsonNode ranges = g.path("loadBalancerIPRanges");
    Optional<List<IpPrefix>> lbRanges = Optional.empty();
    if (!ranges.isMissingNode() && !ranges.isNull()) {
      List<IpPrefix> parsed = new ArrayList<>();
      List<String> raw = strings(at + ".loadBalancerIPRanges", ranges);
      for (int j = 0; j < raw.size(); j++) {
        Optional<IpPrefix> range = IpPrefix.tryParse(raw.get(j));
        if (range.isEmpty()) {
          throw new Invalid(at + ".loadBalancerIPRanges[" + j + "] '" + raw.get(j) + "' is not an address or CIDR");
        }
        parsed.add(range.get());
      }
      lbRanges = Optional.of(parsed);
    }
    return new Grant(selector(at + ".namespaceSelector", selector), networks, lbRanges);
  }

  private static LabelMatcher selector(String at, JsonNode s) throws Invalid {
    Map<String, String> labels = new HashMap<>();
    JsonNode ml = s.path("matchLabels");
    if (!ml.isMissingNode() && !ml.isNull()) {
      if (!ml.isObject()) {
        throw new Invalid(at + ".matchLabels is not a map");
      }
      for (Map.Entry<String, JsonNode> e : (Iterable<Map.Entry<String, JsonNode>>) ml::fields) {
        if (!e.getValue().isTextual()) {
          throw new Invalid(at + ".matchLabels." + e.getKey() + " is not a string");
        }
        labels.put(e.getKey(), e.getValue().asText());
      }
    }
    List<LabelMatcher.Expression> expressions = new ArrayList<>();
    JsonNode me = s.path("matchExpressions");
    if (!me.isMissingNode() && !me.isNull()) {
      if (!me.isArray()) {
        throw new Invalid(at + ".matchExpressions is not a list");
      }
      int i = 0;
      for (JsonNode x : me) {
        String xat = at + ".matchExpressions[" + i++ + "]";
        String key = x.path("key").asText("");
        if (key.isEmpty()) {
          throw new Invalid(xat + ".key is required");
        }
        String op = x.path("operator").asText("");
        LabelMatcher.Operator operator = LabelMatcher.Operator.parse(op)
            .orElseThrow(() -> new Invalid(xat + ".operator '" + op + "' is not In, NotIn, Exists or DoesNotExist"));
        Set<String> values = new LinkedHashSet<>(strings(xat + ".values", x.path("values")));
        boolean needsValues = operator == LabelMatcher.Operator.IN || operator == LabelMatcher.Operator.NOT_IN;
        if (needsValues == values.isEmpty()) {
          throw new Invalid(xat + ": " + op + (needsValues ? " needs values" : " takes no values"));
        }
        expressions.add(new LabelMatcher.Expression(key, operator, values));
      }
    }
    return new LabelMatcher(labels, expressions);
  }

  private static List<String> strings(String at, JsonNode list) throws Invalid {
    if (list.isMissingNode() || list.isNull()) {
      return List.of();
    }
    if (!list.isArray()) {
      throw new Invalid(at + " is not a list");
    }
    List<String> out = new ArrayList<>();
    for (JsonNode n : list) {
      if (!n.isTextual()) {
        throw new Invalid(at + " holds a value that is not a string");
      }
      out.add(n.asText());
    }
    return out;
  }
}
