package io.egressservice.plan;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * A Kubernetes LabelSelector as plain values (matchLabels and matchExpressions, all of which must hold): an empty
 * one selects everything, as {@code namespaceSelector: {}} does.
 */
public record LabelMatcher(Map<String, String> matchLabels, List<Expression> expressions) {
  /** One {@code matchExpressions} item. */
  public record Expression(String key, Operator operator, Set<String> values) {
    public Expression {
      values = Set.copyOf(values);
    }
  }

  /** The four operators of a LabelSelector (Gt and Lt are node affinity's only). */
  public enum Operator {
    IN, NOT_IN, EXISTS, DOES_NOT_EXIST;

    /** The operator of its API spelling ({@code In}, {@code NotIn}, {@code Exists}, {@code DoesNotExist}). */
    public static Optional<Operator> parse(String s) {
      return switch (s == null ? "" : s) {
        case "In" -> Optional.of(IN);
        case "NotIn" -> Optional.of(NOT_IN);
        case "Exists" -> Optional.of(EXISTS);
        case "DoesNotExist" -> Optional.of(DOES_NOT_EXIST);
        default -> Optional.empty();
      };
    }
  }

  public LabelMatcher {
    matchLabels = Map.copyOf(matchLabels);
    expressions = List.copyOf(expressions);
  }

  public static LabelMatcher everything() {
    return new LabelMatcher(Map.of(), List.of());
  }

  public boolean matches(Map<String, String> labels) {
    for (Map.Entry<String, String> e : matchLabels.entrySet()) {
      if (!e.getValue().equals(labels.get(e.getKey()))) {
        return false;
      }
    }
    for (Expression x : expressions) {
      String value = labels.get(x.key());
      boolean ok = switch (x.operator()) {
        case IN -> value != null && x.values().contains(value);
        case NOT_IN -> value == null || !x.values().contains(value);
        case EXISTS -> value != null;
        case DOES_NOT_EXIST -> value == null;
      };
      if (!ok) {
        return false;
      }
    }
    return true;
  }
}
