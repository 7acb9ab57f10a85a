package io.egressservice.probe;

import java.time.Duration;
import java.util.EnumMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * What the startup probe found.
 *
 * @param kernelRelease {@code uname -r} of the kernel probed
 * @param missing each feature that did not work, with why; absent features worked (or were not probed)
 * @param notProbed empty when the probe ran, else why it could not (then {@code missing} is empty)
 * @param took how long the probe took, scratch namespace included
 */
public record KernelFeatures(String kernelRelease, Map<Feature, String> missing, Optional<String> notProbed,
    Duration took) {
  public KernelFeatures {
    missing = missing.isEmpty() ? Map.of() : Map.copyOf(new EnumMap<>(missing));
  }

  /** The probe could not run (no scratch namespace): nothing is known to be missing. */
  public static KernelFeatures notProbed(String kernelRelease, String why, Duration took) {
    return new KernelFeatures(kernelRelease, Map.of(), Optional.of(why), took);
  }

  public boolean has(Feature feature) {
    return !missing.containsKey(feature);
  }

  /** The features that did not work, in declaration order. */
  public Set<Feature> missingFeatures() {
    return missing.isEmpty() ? Set.of() : java.util.Collections.unmodifiableSet(
        java.util.EnumSet.copyOf(missing.keySet()));
  }
}
