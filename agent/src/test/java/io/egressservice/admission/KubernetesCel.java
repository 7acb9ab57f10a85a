package io.egressservice.admission;

import com.fasterxml.jackson.databind.JsonNode;
import dev.cel.bundle.Cel;
import dev.cel.bundle.CelFactory;
import dev.cel.common.CelAbstractSyntaxTree;
import dev.cel.common.CelValidationException;
import dev.cel.common.CelValidationResult;
import dev.cel.common.types.SimpleType;
import dev.cel.common.values.NullValue;
import dev.cel.parser.CelStandardMacro;
import dev.cel.runtime.CelEvaluationException;
import dev.cel.runtime.CelRuntime;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * CEL as the API server evaluates it in a ValidatingAdmissionPolicy ({@code object}, {@code oldObject},
 * {@code params}, {@code namespaceObject}, {@code request}, {@code variables}) and in a CRD's
 * x-kubernetes-validations ({@code self}), on objects as their JSON (integers int, the rest as JSON has it).
 *
 * <p>The environment is cel-java's standard one and nothing else: the standard functions and macros, which every
 * Kubernetes version with CEL has (Kubernetes adds libraries of its own and optional types from 1.29; an
 * expression that needs one of those does not compile here, so what passes here also exists there). The
 * variables are dynamically typed: Kubernetes checks types against the schemas too, which this does not.
 */
public final class KubernetesCel {
  private static final Cel CEL = CelFactory.standardCelBuilder()
      .setStandardMacros(CelStandardMacro.STANDARD_MACROS)
      .addVar("object", SimpleType.DYN)
      .addVar("oldObject", SimpleType.DYN)
      .addVar("params", SimpleType.DYN)
      .addVar("namespaceObject", SimpleType.DYN)
      .addVar("request", SimpleType.DYN)
      .addVar("variables", SimpleType.DYN)
      .addVar("self", SimpleType.DYN)
      .build();

  private KubernetesCel() {}

  /** Each expression compiled once (the API server, too, compiles a policy once and evaluates it per request). */
  private static final Map<String, Compiled> PROGRAMS = new ConcurrentHashMap<>();

  private record Compiled(Optional<CelRuntime.Program> program, Optional<String> error) {}

  /** The value of {@code expression}, or the compile or evaluation error as Kubernetes would report it. */
  public static Result eval(String expression, Map<String, Object> activation) {
    Compiled compiled = PROGRAMS.computeIfAbsent(expression, KubernetesCel::compile);
    if (compiled.error().isPresent()) {
      return new Result(Optional.empty(), compiled.error());
    }
    try {
      return new Result(Optional.of(compiled.program().orElseThrow().eval(activation)), Optional.empty());
    } catch (CelEvaluationException e) {
      return new Result(Optional.empty(), Optional.of("evaluation error: " + e.getMessage()));
    }
  }

  private static Compiled compile(String expression) {
    try {
      CelValidationResult result = CEL.compile(expression);
      if (result.hasError()) {
        return new Compiled(Optional.empty(), Optional.of("compile error: " + result.getErrorString()));
      }
      CelAbstractSyntaxTree ast = result.getAst();
      return new Compiled(Optional.of(CEL.createProgram(ast)), Optional.empty());
    } catch (CelValidationException | CelEvaluationException e) {
      return new Compiled(Optional.empty(), Optional.of("compile error: " + e.getMessage()));
    }
  }

  /** A JSON value as CEL sees it: objects are maps, arrays lists, integers int (64-bit). */
  public static Object value(JsonNode node) {
    if (node == null || node.isNull() || node.isMissingNode()) {
      return NullValue.NULL_VALUE;
    }
    if (node.isObject()) {
      Map<String, Object> map = new LinkedHashMap<>();
      node.fields().forEachRemaining(e -> map.put(e.getKey(), value(e.getValue())));
      return map;
    }
    if (node.isArray()) {
      List<Object> list = new ArrayList<>();
      node.forEach(n -> list.add(value(n)));
      return list;
    }
    if (node.isIntegralNumber()) {
      return node.asLong();
    }
    if (node.isNumber()) {
      return node.asDouble();
    }
    if (node.isBoolean()) {
      return node.asBoolean();
    }
    return node.asText();
  }

  /** A value, or the error that stood in its place. */
  public record Result(Optional<Object> value, Optional<String> error) {
    public boolean isTrue() {
      return value.isPresent() && Boolean.TRUE.equals(value.get());
    }
  }
}
