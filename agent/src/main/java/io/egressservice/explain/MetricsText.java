package io.egressservice.explain;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The Prometheus text exposition format, as far as reading our own agent's gauges needs: one sample per line,
 * {@code name{label="value",...} value}, comments and blank lines skipped, a line that does not parse skipped
 * (the reader wants a few known series, not a validator).
 */
final class MetricsText {
  /** One sample: its metric name, its labels in order, its value. */
  record Sample(String name, Map<String, String> labels, double value) {
    Sample {
      labels = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(labels));
    }
  }

  private MetricsText() {}

  static List<Sample> parse(String text) {
    List<Sample> samples = new ArrayList<>();
    for (String line : text.split("\n")) {
      if (line.isBlank() || line.startsWith("#")) {
        continue;
      }
      sample(line.strip()).ifPresent(samples::add);
    }
    return List.copyOf(samples);
  }

  private static Optional<Sample> sample(String line) {
    int brace = line.indexOf('{');
    int space = line.indexOf(' ');
    if (space < 0) {
      return Optional.empty();
    }
    Map<String, String> labels = new LinkedHashMap<>();
    String name;
    int rest;
    if (brace >= 0 && brace < space) {
      name = line.substring(0, brace);
      int end = labels(line, brace + 1, labels);
      if (end < 0) {
        return Optional.empty();
      }
      rest = end + 1;
    } else {
      name = line.substring(0, space);
      rest = space;
    }
    String[] fields = line.substring(rest).strip().split("\\s+");
    try {
      return Optional.of(new Sample(name, labels, value(fields[0])));
    } catch (NumberFormatException e) {
      return Optional.empty();
    }
  }

  /** Reads {@code a="b",c="d"} from {@code from} into {@code into}; the index of the closing brace, or -1. */
  private static int labels(String line, int from, Map<String, String> into) {
    int i = from;
    while (i < line.length()) {
      char c = line.charAt(i);
      if (c == '}') {
        return i;
      }
      if (c == ',' || c == ' ') {
        i++;
        continue;
      }
      int eq = line.indexOf('=', i);
      if (eq < 0 || eq + 1 >= line.length() || line.charAt(eq + 1) != '"') {
        return -1;
      }
      StringBuilder value = new StringBuilder();
      int j = eq + 2;
      for (; j < line.length() && line.charAt(j) != '"'; j++) {
        char v = line.charAt(j);
        if (v == '\\' && j + 1 < line.length()) {
          char escaped = line.charAt(++j);
          value.append(escaped == 'n' ? '\n' : escaped);
        } else {
          value.append(v);
        }
      }
      if (j >= line.length()) {
        return -1;
      }
      into.put(line.substring(i, eq).strip(), value.toString());
      i = j + 1;
    }
    return -1;
  }

  private static double value(String text) {
    return switch (text) {
      case "+Inf" -> Double.POSITIVE_INFINITY;
      case "-Inf" -> Double.NEGATIVE_INFINITY;
      case "NaN" -> Double.NaN;
      default -> Double.parseDouble(text);
    };
  }
}
