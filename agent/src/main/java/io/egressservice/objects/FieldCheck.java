package io.egressservice.objects;

import com.fasterxml.jackson.databind.BeanDescription;
import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.JsonDeserializer;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.annotation.JsonDeserialize;
import com.fasterxml.jackson.databind.introspect.BeanPropertyDefinition;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * What kubectl's strict field validation (and the API server's schema) would say about an object in
 * a file, checked against the Java model the plan reads it into: fields the model does not know
 * ({@code sourceIPBY}, {@code spce}), which reading would silently drop, and numbers or booleans
 * where the schema wants a string ({@code network: 100}), which reading would silently turn into
 * one although the API server refuses them.
 */
final class FieldCheck {
  /** A field the model does not know, by its path, and the known one it is probably a typo of. */
  record UnknownField(String path, Optional<String> suggestion) {
    @Override
    public String toString() {
      return "\"" + path + "\"" + suggestion.map(s -> " (did you mean \"" + s + "\"?)").orElse("");
    }
  }

  /** What was found: unknown fields and type errors (each a sentence starting with the path). */
  record Findings(List<UnknownField> unknownFields, List<String> typeErrors) {
    Findings {
      unknownFields = List.copyOf(unknownFields);
      typeErrors = List.copyOf(typeErrors);
    }
  }

  /** A bean type's properties, or none for a free-form type; looked up once per type (introspection is slow). */
  private final Map<JavaType, Optional<Map<String, JavaType>>> models = new HashMap<>();
  private final ObjectMapper mapper;
  private final List<UnknownField> unknown = new ArrayList<>();
  private final List<String> typeErrors = new ArrayList<>();

  /** A checker for the objects of one load, which share the knowledge of the model's types. */
  FieldCheck(ObjectMapper mapper) {
    this.mapper = mapper;
  }

  /** Checks {@code doc} as a {@code type} the way the mapper would read it. */
  Findings check(JsonNode doc, Class<?> type) {
    unknown.clear();
    typeErrors.clear();
    walk(doc, mapper.constructType(type), "");
    return new Findings(unknown, typeErrors);
  }

  private void walk(JsonNode node, JavaType type, String path) {
    if (node == null || node.isNull()) {
      return;
    }
    if (type.isContainerType() && !type.isMapLikeType()) {
      if (node.isArray()) {
        for (int i = 0; i < node.size(); i++) {
          walk(node.get(i), type.getContentType(), path + "[" + i + "]");
        }
      }
      return;
    }
    if (type.isMapLikeType()) {
      if (node.isObject()) {
        for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
          Map.Entry<String, JsonNode> e = it.next();
          walk(e.getValue(), type.getContentType(), join(path, e.getKey()));
        }
      }
      return;
    }
    Class<?> raw = type.getRawClass();
    if (raw == String.class) {
      if (node.isNumber() || node.isBoolean()) {
        typeErrors.add(path + ": must be a string, not the " + (node.isNumber() ? "number " : "boolean ")
            + node.asText() + " (the API server refuses it; quote it: \"" + node.asText() + "\")");
      }
      return;
    }
    if (!isModel(raw) || !node.isObject()) {
      return; // a scalar, an enum, or a type with a reader of its own (IntOrString, Quantity): checked on reading
    }
    Optional<Map<String, JavaType>> model = models.computeIfAbsent(type, this::properties);
    if (model.isEmpty()) {
      return;
    }
    Map<String, JavaType> properties = model.get();
    for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      JavaType property = properties.get(e.getKey());
      if (property == null) {
        unknown.add(new UnknownField(join(path, e.getKey()),
            suggestion(e.getKey(), properties.keySet()).map(s -> join(path, s))));
      } else {
        walk(e.getValue(), property, join(path, e.getKey()));
      }
    }
  }

  private Optional<Map<String, JavaType>> properties(JavaType type) {
    BeanDescription bean = mapper.getDeserializationConfig().introspect(type);
    Map<String, JavaType> properties = new LinkedHashMap<>();
    for (BeanPropertyDefinition p : bean.findProperties()) {
      if (p.couldDeserialize()) {
        properties.put(p.getName(), p.getPrimaryType());
      }
    }
    if (properties.isEmpty() && bean.findAnySetterAccessor() != null) {
      return Optional.empty(); // free-form by design (FieldsV1 of managedFields: "f:spec", ...), as in the API's schema
    }
    return Optional.of(properties);
  }

  /** Kubernetes' model classes and ours, read field by field (not those with a deserializer of their own). */
  private static boolean isModel(Class<?> raw) {
    String pkg = raw.getPackageName();
    if (!pkg.startsWith("io.fabric8.kubernetes.") && !pkg.startsWith("org.ovn.k8s.")) {
      return false;
    }
    if (raw.isEnum() || raw.isInterface()) {
      return false;
    }
    JsonDeserialize custom = raw.getAnnotation(JsonDeserialize.class);
    return custom == null || custom.using() == JsonDeserializer.None.class;
  }

  private static String join(String path, String field) {
    return path.isEmpty() ? field : path + "." + field;
  }

  /** A known name that differs only in case or by at most two edits (a typo), if exactly one does. */
  static Optional<String> suggestion(String name, Iterable<String> known) {
    List<String> close = new ArrayList<>();
    for (String k : known) {
      if (k.equalsIgnoreCase(name)) {
        return Optional.of(k);
      }
      if (Math.min(k.length(), name.length()) >= 3 && editDistance(k.toLowerCase(), name.toLowerCase()) <= 2) {
        close.add(k);
      }
    }
    return close.size() == 1 ? Optional.of(close.get(0)) : Optional.empty();
  }

  /** Optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours. */
  static int editDistance(String a, String b) {
    int[][] d = new int[a.length() + 1][b.length() + 1];
    for (int i = 0; i <= a.length(); i++) {
      d[i][0] = i;
    }
    for (int j = 0; j <= b.length(); j++) {
      d[0][j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      for (int j = 1; j <= b.length(); j++) {
        int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
        d[i][j] = Math.min(Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1), d[i - 1][j - 1] + cost);
        if (i > 1 && j > 1 && a.charAt(i - 1) == b.charAt(j - 2) && a.charAt(i - 2) == b.charAt(j - 1)) {
          d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
        }
      }
    }
    return d[a.length()][b.length()];
  }
}
