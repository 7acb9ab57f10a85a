package io.egressservice.admission;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * One ValidatingAdmissionPolicy with its binding, evaluated as the API server does: matchConstraints'
 * resourceRules, then matchConditions (all true, or the request is not this policy's), the binding's paramRef
 * (parameterNotFoundAction), the variables, then every validation (false: refused with its messageExpression or
 * message). An error anywhere counts as failurePolicy says (every policy here has Fail: refused).
 *
 * <p>One difference: Kubernetes evaluates a variable when an expression first uses it; this evaluates them all
 * up front, so a variable that fails where Kubernetes would never have used it refuses here (stricter).
 */
public record AdmissionPolicy(JsonNode policy, JsonNode binding) {

  /** The outcome: admitted or not, whether the policy applied at all, and the messages of what refused. */
  public record Decision(boolean admitted, boolean matched, List<String> messages) {
    static Decision notMatched() {
      return new Decision(true, false, List.of());
    }

    static Decision refused(String message) {
      return new Decision(false, true, List.of(message));
    }
  }

  /** {@code params}: the parameter objects by name (the binding's paramRef picks one). */
  public Decision evaluate(AdmissionRequest request, Map<String, JsonNode> params) {
    if (!matchesResource(request)) {
      return Decision.notMatched();
    }
    Map<String, Object> activation = new LinkedHashMap<>();
    activation.put("object", KubernetesCel.value(request.object()));
    activation.put("oldObject", KubernetesCel.value(request.oldObject()));
    activation.put("namespaceObject", KubernetesCel.value(request.namespaceObject()));
    activation.put("request", request.asVariable());
    activation.put("params", KubernetesCel.value(null));
    for (JsonNode condition : policy.path("spec").path("matchConditions")) {
      KubernetesCel.Result r = KubernetesCel.eval(condition.path("expression").asText(), activation);
      if (r.error().isPresent()) {
        return failure("matchCondition " + condition.path("name").asText() + ": " + r.error().get());
      }
      if (!r.isTrue()) {
        return Decision.notMatched();
      }
    }
    if (policy.path("spec").has("paramKind")) {
      String name = binding.path("spec").path("paramRef").path("name").asText();
      JsonNode param = params.get(name);
      if (param == null) {
        return "Deny".equals(binding.path("spec").path("paramRef").path("parameterNotFoundAction").asText())
            ? failure("no params found for policy binding with Deny parameterNotFoundAction (" + name + ")")
            : Decision.notMatched();
      }
      activation.put("params", KubernetesCel.value(param));
    }
    Map<String, Object> variables = new LinkedHashMap<>();
    activation.put("variables", variables);
    for (JsonNode variable : policy.path("spec").path("variables")) {
      KubernetesCel.Result r = KubernetesCel.eval(variable.path("expression").asText(), activation);
      if (r.error().isPresent()) {
        return failure("variable " + variable.path("name").asText() + ": " + r.error().get());
      }
      variables.put(variable.path("name").asText(), r.value().orElseThrow());
    }
    List<String> messages = new ArrayList<>();
    for (JsonNode validation : policy.path("spec").path("validations")) {
      KubernetesCel.Result r = KubernetesCel.eval(validation.path("expression").asText(), activation);
      if (r.error().isPresent()) {
        messages.add(validation.path("expression").asText() + ": " + r.error().get());
      } else if (!r.isTrue()) {
        messages.add(message(validation, activation));
      }
    }
    return new Decision(messages.isEmpty(), true, List.copyOf(messages));
  }

  private Decision failure(String why) {
    return "Ignore".equals(policy.path("spec").path("failurePolicy").asText())
        ? Decision.notMatched() : Decision.refused(why);
  }

  private static String message(JsonNode validation, Map<String, Object> activation) {
    if (validation.has("messageExpression")) {
      KubernetesCel.Result r = KubernetesCel.eval(validation.path("messageExpression").asText(), activation);
      Optional<Object> text = r.value().filter(String.class::isInstance);
      if (text.isPresent()) {
        return (String) text.get();
      }
    }
    return validation.has("message") ? validation.path("message").asText()
        : "failed expression: " + validation.path("expression").asText();
  }

  private boolean matchesResource(AdmissionRequest request) {
    String resource = request.subResource().isEmpty() ? request.resource()
        : request.resource() + "/" + request.subResource();
    for (JsonNode rule : policy.path("spec").path("matchConstraints").path("resourceRules")) {
      if (contains(rule.path("apiGroups"), request.group()) && contains(rule.path("operations"), request.operation())
          && contains(rule.path("resources"), resource)) {
        return true;
      }
    }
    return false;
  }

  private static boolean contains(JsonNode list, String value) {
    for (JsonNode item : list) {
      if (item.asText().equals(value) || item.asText().equals("*")) {
        return true;
      }
    }
    return false;
  }
}
