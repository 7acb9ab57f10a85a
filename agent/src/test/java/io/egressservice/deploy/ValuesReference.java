package io.egressservice.deploy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * docs/values.md, the chart's values reference, generated from values.yaml: one row per value, its default as
 * values.yaml sets it, and the comment block right above it (a blank line ends a block). values.yaml stays the one
 * place where a value is explained; {@link ValuesReferenceTest} fails when docs/values.md is not what this makes of
 * it, and rewrites it with {@code -Dvalues.reference.write=true}.
 */
final class ValuesReference {
  static final Path VALUES = HelmChart.CHART.resolve("values.yaml");
  static final Path DOC = HelmChart.ROOT.resolve("docs/values.md");
  /** A mapping key at some indentation: {@code <indent><key>:<rest>}; list items ({@code - ...}) are not keys. */
  private static final Pattern KEY = Pattern.compile("^( *)([A-Za-z][A-Za-z0-9_.-]*):(.*)$");
  private static final Pattern COMMENT = Pattern.compile("^ *#(.*)$");
  private static final ObjectMapper JSON = new ObjectMapper();

  private ValuesReference() {}

  /** One documented value: its dotted path, its default (empty for a section of further values), its comment. */
  record Row(String path, String defaultValue, String description) {}

  static List<Row> rows(String valuesYaml) {
    JsonNode values = parse(valuesYaml);
    List<Row> rows = new ArrayList<>();
    List<String> stack = new ArrayList<>();
    List<Integer> indents = new ArrayList<>();
    List<String> comment = new ArrayList<>();
    boolean started = false;
    int insideListOf = Integer.MAX_VALUE; // the indentation of a key whose value is a list: its items are one value
    for (String line : valuesYaml.split("\n", -1)) {
      Matcher c = COMMENT.matcher(line);
      Matcher k = KEY.matcher(line);
      int lineIndent = line.length() - line.stripLeading().length();
      if (!line.isBlank() && !c.matches()) {
        if (lineIndent > insideListOf) {
          continue;
        }
        insideListOf = Integer.MAX_VALUE;
      }
      if (line.isBlank()) {
        comment.clear();
      } else if (c.matches()) {
        comment.add(c.group(1).strip());
      } else if (k.matches()) {
        started = true;
        int indent = k.group(1).length();
        while (!indents.isEmpty() && indents.get(indents.size() - 1) >= indent) {
          indents.remove(indents.size() - 1);
          stack.remove(stack.size() - 1);
        }
        stack.add(k.group(2));
        indents.add(indent);
        JsonNode node = values;
        for (String key : stack) {
          node = node.path(key);
        }
        boolean section = node.isObject() && node.size() > 0;
        if (node.isArray()) {
          insideListOf = indent;
        }
        rows.add(new Row(String.join(".", stack), section ? "" : compact(node), String.join(" ", comment)));
        comment.clear();
      } else if (!started) {
        comment.clear();
      }
    }
    return rows;
  }

  /** The whole page. */
  static String markdown(String valuesYaml) {
    StringBuilder out = new StringBuilder()
        .append("# Chart values\n\n")
        .append("Every value of `charts/egress-service-agent`, its default and what it does: generated from the comments\n")
        .append("of `charts/egress-service-agent/values.yaml` (do not edit here; edit values.yaml, then run\n")
        .append("`mvn -pl agent -am verify -Dtest=ValuesReferenceTest -Dsurefire.failIfNoSpecifiedTests=false -DskipITs\n")
        .append("-Dvalues.reference.write=true`; `ValuesReferenceTest` fails while this page is out of date).\n")
        .append("`values.schema.json` refuses values that are not listed here, with their name.\n\n")
        .append("| value | default | what |\n|---|---|---|\n");
    for (Row row : rows(valuesYaml)) {
      out.append("| `").append(row.path()).append("` | ")
          .append(row.defaultValue().isEmpty() ? "" : "`" + cell(row.defaultValue()) + "`").append(" | ")
          .append(cell(row.description())).append(" |\n");
    }
    return out.toString();
  }

  static String markdown() {
    try {
      return markdown(Files.readString(VALUES, StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Rewrites docs/values.md. */
  public static void main(String[] args) throws IOException {
    Files.writeString(DOC, markdown(), StandardCharsets.UTF_8);
  }

  private static String cell(String text) {
    return text.replace("|", "\\|");
  }

  private static String compact(JsonNode node) {
    try {
      return node.isMissingNode() || node.isNull() ? "null" : JSON.writeValueAsString(node);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static JsonNode parse(String yaml) {
    try {
      return new YAMLMapper().readTree(yaml);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
