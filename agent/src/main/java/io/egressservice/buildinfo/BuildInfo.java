package io.egressservice.buildinfo;

import java.io.IOException;
import java.io.InputStream;
import java.util.Objects;
import java.util.Optional;
import java.util.Properties;

/**
 * What was built: the Maven project version and, when the build could ask git, the commit. Maven
 * writes both into {@code build-info.properties} next to this class (resource filtering; the commit
 * comes from {@code git rev-parse} at build time, or {@code -Dgit.commit=...} where there is no
 * {@code .git}, as in the image build). Shared by {@code --version} and the {@code build_info} metric.
 *
 * @param version e.g. {@code 0.1.0-SNAPSHOT}; {@code unknown} when the classes were not built by Maven
 * @param commit the abbreviated git commit, empty when the build did not know it
 */
public record BuildInfo(String version, Optional<String> commit) {
  public static final String UNKNOWN_VERSION = "unknown";
  static final String RESOURCE = "build-info.properties";

  public BuildInfo {
    Objects.requireNonNull(version, "version");
    Objects.requireNonNull(commit, "commit");
  }

  /** The build of the running classes. */
  public static BuildInfo current() {
    Properties p = new Properties();
    try (InputStream in = BuildInfo.class.getResourceAsStream(RESOURCE)) {
      if (in != null) {
        p.load(in);
      }
    } catch (IOException e) {
      // unreadable: as if absent, every value unknown
    }
    return of(p.getProperty("version"), p.getProperty("commit"));
  }

  /**
   * From the two raw values; {@code null}, blank or an unfiltered {@code ${...}} placeholder means the
   * build did not know it.
   */
  public static BuildInfo of(String version, String commit) {
    return new BuildInfo(known(version).orElse(UNKNOWN_VERSION), known(commit));
  }

  private static Optional<String> known(String value) {
    return Optional.ofNullable(value).map(String::trim).filter(v -> !v.isEmpty() && !v.startsWith("${"));
  }

  /** E.g. {@code 0.1.0-SNAPSHOT (commit 1a2b3c4d5e6f)} or {@code 0.1.0-SNAPSHOT}. */
  public String describe() {
    return version + commit.map(c -> " (commit " + c + ")").orElse("");
  }
}
