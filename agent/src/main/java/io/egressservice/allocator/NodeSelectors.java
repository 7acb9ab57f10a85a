package io.egressservice.allocator;

import io.egressservice.plan.LabelMatcher;
import io.fabric8.kubernetes.api.model.LabelSelector;
import io.fabric8.kubernetes.api.model.LabelSelectorRequirement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Predicate;

/**
 * {@code spec.nodeSelector} to a label predicate, with the validation of apimachinery's
 * {@code LabelSelectorAsSelector}: keys must be qualified names, values valid label values, operators
 * In/NotIn (with values) or Exists/DoesNotExist (without). An absent or empty selector matches every node
 * (the field is a struct, not a pointer, in OVN-Kubernetes). Pure.
 */
public final class NodeSelectors {
  private NodeSelectors() {}

  /** Thrown for a selector the API server would refuse to evaluate. */
  public static final class InvalidSelectorException extends Exception {
    private static final long serialVersionUID = 1L;

    InvalidSelectorException(String message) {
      super(message);
    }
  }

  public static Predicate<Map<String, String>> compile(LabelSelector selector) throws InvalidSelectorException {
    if (selector == null) {
      return labels -> true;
    }
    Map<String, String> matchLabels = new TreeMap<>();
    if (selector.getMatchLabels() != null) {
      for (Map.Entry<String, String> e : selector.getMatchLabels().entrySet()) {
        String value = e.getValue() == null ? "" : e.getValue();
        check(e.getKey(), List.of(value));
        matchLabels.put(e.getKey(), value);
      }
    }
    List<LabelMatcher.Expression> expressions = new ArrayList<>();
    if (selector.getMatchExpressions() != null) {
      for (LabelSelectorRequirement r : selector.getMatchExpressions()) {
        if (r == null) {
          throw new InvalidSelectorException("matchExpressions contains a null requirement");
        }
        String key = r.getKey();
        List<String> values = r.getValues() == null ? List.of() : r.getValues();
        check(key, values);
        String op = r.getOperator() == null ? "" : r.getOperator();
        LabelMatcher.Operator operator = LabelMatcher.Operator.parse(op).orElseThrow(() -> new InvalidSelectorException(
            "matchExpressions key \"" + key + "\": operator \"" + op + "\" is not In, NotIn, Exists or DoesNotExist"));
        boolean needsValues = operator == LabelMatcher.Operator.IN || operator == LabelMatcher.Operator.NOT_IN;
        requireValues(key, op, values, needsValues);
        expressions.add(new LabelMatcher.Expression(key, operator, Set.copyOf(values)));
      }
    }
    // The namespaces' grants match with the same LabelMatcher: one evaluation of selectors for nodes and namespaces.
    return new LabelMatcher(matchLabels, expressions)::matches;
  }

  private static void check(String key, List<String> values) throws InvalidSelectorException {
    var keyProblem = LabelNames.keyProblem(key);
    if (keyProblem.isPresent()) {
      throw new InvalidSelectorException(keyProblem.get());
    }
    for (String v : values) {
      var valueProblem = LabelNames.valueProblem(v);
      if (valueProblem.isPresent()) {
        throw new InvalidSelectorException(valueProblem.get());
      }
    }
  }

  private static void requireValues(String key, String op, List<String> values, boolean required)
      throws InvalidSelectorException {
    if (required && values.isEmpty()) {
      throw new InvalidSelectorException("matchExpressions key \"" + key + "\": " + op + " needs at least one value");
    }
    if (!required && !values.isEmpty()) {
      throw new InvalidSelectorException("matchExpressions key \"" + key + "\": " + op + " takes no values");
    }
  }
}
