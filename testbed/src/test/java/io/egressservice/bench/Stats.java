package io.egressservice.bench;

import java.util.List;
import java.util.Locale;

/** Medians and lists of seconds for the failover rows. */
final class Stats {
  private Stats() {}

  static double median(List<Double> xs) {
    List<Double> sorted = xs.stream().filter(x -> !x.isNaN()).sorted().toList();
    if (sorted.isEmpty()) {
      return Double.NaN;
    }
    int n = sorted.size();
    return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
  }

  static double max(List<Double> xs) {
    return xs.stream().mapToDouble(Double::doubleValue).max().orElse(Double.NaN);
  }

  static String seconds(List<Double> xs) {
    return xs.stream().map(x -> String.format(Locale.ROOT, "%.2f", x)).toList().toString();
  }
}
