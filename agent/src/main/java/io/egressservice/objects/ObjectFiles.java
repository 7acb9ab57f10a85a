package io.egressservice.objects;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MappingIterator;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.exc.InvalidFormatException;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import io.egressservice.plan.GrantPolicy;
import io.egressservice.plan.NamespaceInfo;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceSpec;

/**
 * Reads kubectl-style input: YAML (several documents per file) or JSON, {@code kind: List}, and
 * directories (their {@code .yaml}, {@code .yml} and {@code .json} files, sorted). Kinds other than
 * EgressService, Service, EndpointSlice and Node are skipped with a note.
 */
public final class ObjectFiles {
  private static final ObjectMapper MAPPER =
      new ObjectMapper().configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);
  private static final YAMLMapper YAML = new YAMLMapper();

  private ObjectFiles() {}

  /**
   * Loads every object under {@code paths}.
   *
   * @param notes receives one line per skipped object (unknown kind)
   * @throws ObjectsException for unreadable files and invalid objects, naming the file and the object
   */
  public static ClusterObjects load(List<Path> paths, Consumer<String> notes) throws ObjectsException {
    return load(paths, notes, notes);
  }

  /**
   * As {@link #load(List, Consumer)}, with {@code warnings} receiving one line per field that
   * kubectl's strict validation would refuse but the plan can do without (an unknown field, e.g. a
   * typo: it is ignored), naming the file, the object and the field.
   *
   * @throws ObjectsException also for a value of the wrong type that reading would convert (a number
   *     where the schema wants a string), which the API server refuses
   */
  public static ClusterObjects load(List<Path> paths, Consumer<String> notes, Consumer<String> warnings)
      throws ObjectsException {
    Collector collector = new Collector(notes, warnings);
    for (Path path : paths) {
      for (Path file : expand(path)) {
        collector.file(file);
      }
    }
    return new ClusterObjects(collector.egressServices, collector.services, collector.slices, collector.nodes,
        new GrantObjects(collector.policy.orElse(GrantPolicy.off()), List.copyOf(collector.namespaces.values())));
  }

  private static List<Path> expand(Path path) throws ObjectsException {
    if (!Files.exists(path)) {
      throw new ObjectsException(path + ": no such file or directory");
    }
    if (!Files.isDirectory(path)) {
      return List.of(path);
    }
    try (Stream<Path> files = Files.walk(path)) {
      List<Path> out = files.filter(Files::isRegularFile)
          .filter(p -> {
            String n = p.getFileName().toString();
            return n.endsWith(".yaml") || n.endsWith(".yml") || n.endsWith(".json");
          })
          .sorted()
          .collect(Collectors.toList());
      if (out.isEmpty()) {
        throw new ObjectsException(path + ": directory holds no .yaml, .yml or .json file");
      }
      return out;
    } catch (IOException e) {
      throw new ObjectsException(path + ": cannot read directory: " + e.getMessage(), e);
    }
  }

  private static final class Collector {
    private final Consumer<String> notes;
    private final Consumer<String> warnings;
    private final FieldCheck fieldCheck = new FieldCheck(MAPPER);
    private final List<EgressService> egressServices = new ArrayList<>();
    private final List<Service> services = new ArrayList<>();
    private final List<EndpointSlice> slices = new ArrayList<>();
    private final List<Node> nodes = new ArrayList<>();
    private final java.util.Map<String, NamespaceInfo> namespaces = new java.util.TreeMap<>();
    private Optional<GrantPolicy> policy = Optional.empty();

    Collector(Consumer<String> notes, Consumer<String> warnings) {
      this.notes = notes;
      this.warnings = warnings;
    }

    void file(Path file) throws ObjectsException {
      String text;
      try {
        text = Files.readString(file);
      } catch (IOException e) {
        throw new ObjectsException(file + ": cannot read: " + e.getMessage(), e);
      }
      List<JsonNode> documents = new ArrayList<>();
      // YAML is a superset of JSON, so one parser reads both, multi-document files included.
      try (MappingIterator<JsonNode> it = YAML.readerFor(JsonNode.class).readValues(text)) {
        while (it.hasNextValue()) {
          JsonNode doc = it.nextValue();
          if (doc != null && !doc.isNull() && !doc.isMissingNode()) {
            documents.add(doc);
          }
        }
      } catch (IOException | RuntimeException e) {
        throw new ObjectsException(file + syntaxError(e), e);
      }
      int index = 0;
      for (JsonNode doc : documents) {
        index++;
        object(file, "document " + index, doc);
      }
    }

    private void object(Path file, String where, JsonNode doc) throws ObjectsException {
      if (!doc.isObject()) {
        throw new ObjectsException(file + ": " + where + " is not an object (a mapping with kind and metadata)");
      }
      String kind = doc.path("kind").asText("");
      String apiVersion = doc.path("apiVersion").asText("");
      String ns = doc.path("metadata").path("namespace").asText("");
      String name = doc.path("metadata").path("name").asText("");
      String label = kind + " " + (ns.isEmpty() ? "" : ns + "/") + (name.isEmpty() ? "(no name)" : name);
      if (kind.isEmpty()) {
        throw new ObjectsException(file + ": " + where + " has no kind");
      }
      if (kind.equals("List") || kind.endsWith("List") && doc.has("items")) {
        JsonNode items = doc.path("items");
        int i = 0;
        for (JsonNode item : items) {
          object(file, where + " item " + (++i), item);
        }
        return;
      }
      boolean known = switch (kind) {
        case "EgressService", "Service", "EndpointSlice", "Node", "Namespace" -> true;
        default -> false;
      };
      if (kind.equals(PolicyDecoding.KIND) && apiVersion.equals(PolicyDecoding.API_VERSION)) {
        policyDocument(file, where, label, name, doc);
        return;
      }
      if (!known) {
        notes.accept(file + ": skipping " + label + " (" + where + "): kind " + kind + " is not used by the plan");
        return;
      }
      if (name.isEmpty()) {
        throw new ObjectsException(file + ": " + label + " (" + where + "): metadata.name is required");
      }
      Optional<String> badName = KubernetesNames.nameProblem(kind, name)
          .or(() -> ns.isEmpty() ? Optional.empty() : KubernetesNames.namespaceProblem(ns));
      if (badName.isPresent()) {
        throw new ObjectsException(file + ": " + label + " (" + where + "): " + badName.get());
      }
      String expectedApi = switch (kind) {
        case "EgressService" -> "k8s.ovn.org/v1";
        case "EndpointSlice" -> "discovery.k8s.io/v1";
        default -> "v1";
      };
      if (!apiVersion.equals(expectedApi)) {
        throw new ObjectsException(file + ": " + label + " (" + where + "): apiVersion is '" + apiVersion
            + "', expected " + expectedApi);
      }
      Class<?> model = switch (kind) {
        case "EgressService" -> EgressService.class;
        case "Service" -> Service.class;
        case "EndpointSlice" -> EndpointSlice.class;
        case "Namespace" -> io.fabric8.kubernetes.api.model.Namespace.class;
        default -> Node.class;
      };
      FieldCheck.Findings findings = fieldCheck.check(doc, model);
      if (!findings.typeErrors().isEmpty()) {
        throw new ObjectsException(file + ": " + label + " (" + where + "): " + String.join("; ", findings.typeErrors()));
      }
      for (FieldCheck.UnknownField field : findings.unknownFields()) {
        warnings.accept(file + ": " + label + " (" + where + "): unknown field " + field
            + ", ignored (kubectl's strict validation refuses it)");
      }
      try {
        switch (kind) {
          case "EgressService" -> {
            EgressService es = MAPPER.treeToValue(doc, EgressService.class);
            defaultNamespace(es.getMetadata());
            egressServices.add(es);
          }
          case "Service" -> {
            Service s = MAPPER.treeToValue(doc, Service.class);
            defaultNamespace(s.getMetadata());
            services.add(s);
          }
          case "EndpointSlice" -> {
            EndpointSlice s = MAPPER.treeToValue(doc, EndpointSlice.class);
            defaultNamespace(s.getMetadata());
            slices.add(s);
          }
          case "Namespace" -> {
            NamespaceInfo read = PolicyDecoding.namespace(
                MAPPER.treeToValue(doc, io.fabric8.kubernetes.api.model.Namespace.class));
            namespaces.put(read.name(), read);
          }
          default -> nodes.add(MAPPER.treeToValue(doc, Node.class));
        }
      } catch (JsonProcessingException | IllegalArgumentException e) {
        throw new ObjectsException(file + ": " + label + " (" + where + "): " + describe(e), e);
      }
    }

    /**
     * The EgressServicePolicy: only the one named {@code cluster} counts, as in a cluster; one that does not read grants
     * nothing (the plan says why) and is warned about here too.
     */
    private void policyDocument(Path file, String where, String label, String name, JsonNode doc) {
      if (!GrantPolicy.NAME.equals(name)) {
        notes.accept(file + ": skipping " + label + " (" + where + "): only the EgressServicePolicy named '"
            + GrantPolicy.NAME + "' is read");
        return;
      }
      GrantPolicy read = PolicyDecoding.policy(doc.path("spec"));
      read.problem().ifPresent(p -> warnings.accept(file + ": " + label + " (" + where + "): " + p
          + "; it grants nothing while the policy is enforced"));
      policy = Optional.of(read);
    }
  }

  private static void defaultNamespace(io.fabric8.kubernetes.api.model.ObjectMeta meta) {
    if (meta.getNamespace() == null || meta.getNamespace().isEmpty()) {
      meta.setNamespace("default");
    }
  }

  private static String describe(Exception e) {
    if (e instanceof InvalidFormatException ife && ife.getTargetType() != null && ife.getTargetType().isEnum()) {
      String allowed = Arrays.stream(ife.getTargetType().getEnumConstants())
          .map(c -> c instanceof EgressServiceSpec.SourceIPBy s ? s.getValue() : c.toString())
          .collect(Collectors.joining(", "));
      return path(ife) + ": '" + ife.getValue() + "' is not one of " + allowed;
    }
    if (e instanceof JsonMappingException jme) {
      return path(jme) + ": " + firstLine(jme.getOriginalMessage());
    }
    return firstLine(e.getMessage());
  }

  private static String path(JsonMappingException e) {
    StringBuilder sb = new StringBuilder();
    for (JsonMappingException.Reference ref : e.getPath()) {
      if (ref.getFieldName() != null) {
        if (sb.length() > 0) {
          sb.append('.');
        }
        sb.append(ref.getFieldName());
      } else if (ref.getIndex() >= 0) {
        sb.append('[').append(ref.getIndex()).append(']');
      }
    }
    return sb.length() == 0 ? "(object)" : sb.toString();
  }

  /**
   * Where and why a file is not YAML or JSON, as editors and compilers say it: {@code :LINE:COLUMN: not valid YAML or
   * JSON: PROBLEM} (both from 1), from the YAML parser's mark of the problem (not the position of the last token
   * read), or the JSON location; without either, the message's first line.
   */
  private static String syntaxError(Exception e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof org.yaml.snakeyaml.error.MarkedYAMLException m && m.getProblemMark() != null) {
        String context = m.getContext() == null ? "" : m.getContext() + ": ";
        return ":" + (m.getProblemMark().getLine() + 1) + ":" + (m.getProblemMark().getColumn() + 1)
            + ": not valid YAML or JSON: " + context + firstLine(m.getProblem());
      }
    }
    if (e instanceof JsonProcessingException j && j.getLocation() != null && j.getLocation().getLineNr() > 0) {
      return ":" + j.getLocation().getLineNr() + ":" + j.getLocation().getColumnNr() + ": not valid YAML or JSON: "
          + firstLine(j.getOriginalMessage());
    }
    return ": not valid YAML or JSON: " + firstLine(e.getMessage());
  }

  private static String firstLine(String s) {
    if (s == null) {
      return "(no detail)";
    }
    int nl = s.indexOf('\n');
    return nl < 0 ? s : s.substring(0, nl);
  }
}
