package io.egressservice.allocator;

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
    List<Predicate<Map<String, String>>> terms = new ArrayList<>();
    if (selector == null) {
      return labels -> true;
    }
    if (selector.getMatchLabels() != null) {
      for (Map.Entry<String, String> e : new TreeMap<>(selector.getMatchLabels()).entrySet()) {
        String key = e.getKey();
        String value = e.getValue() == null ? "" : e.getValue();
        check(key, List.of(value));
        terms.add(labels -> value.equals(labels.get(key)));
      }
    }
    if (selector.getMatchExpressions() != null) {
      for (LabelSelectorRequirement r : selector.getMatchExpressions()) {
        if (r == null) {
          throw new InvalidSelectorException("matchExpressions contains a null requirement");
        }
        String key = r.getKey();
        List<String> values = r.getValues() == null ? List.of() : r.getValues();
        check(key, values);
        String op = r.getOperator() == null ? "" : r.getOperator();
        Set<String> set = Set.copyOf(values);
        switch (op) {
          case "In" -> {
            requireValues(key, op, values, true);
            terms.add(labels -> labels.get(key) != null && set.contains(labels.get(key)));
          }
          case "NotIn" -> {
            requireValues(key, op, values, true);
            terms.add(labels -> labels.get(key) == null || !set.contains(labels.get(key)));
          }
          case "Exists" -> {
            requireValues(key, op, values, false);
            terms.add(labels -> labels.get(key) != null);
          }
          case "DoesNotExist" -> {
            requireValues(key, op, values, false);
            terms.add(labels -> labels.get(key) == null);
          }
          default -> throw new InvalidSelectorException(
              "matchExpressions key \"" + key + "\": operator \"" + op + "\" is not In, NotIn, Exists or DoesNotExist");
        }
      }
    }
    List<Predicate<Map<String, String>>> all = List.copyOf(terms);
    return labels -> all.stream().allMatch(t -> t.test(labels));
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
