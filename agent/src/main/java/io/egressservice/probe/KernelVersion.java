package io.egressservice.probe;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Compares a {@code uname -r} release ("6.18.44-fc-v1272", "5.14.0-427.el9.x86_64") with an upstream version. */
final class KernelVersion {
  private static final Pattern LEADING = Pattern.compile("^(\\d+)\\.(\\d+)");

  private KernelVersion() {}

  /** Whether {@code release} is at least {@code major.minor}; an unreadable release counts as new enough. */
  static boolean atLeast(String release, int major, int minor) {
    Matcher m = LEADING.matcher(release);
    if (!m.find()) {
      return true;
    }
    int ma = Integer.parseInt(m.group(1));
    int mi = Integer.parseInt(m.group(2));
    return ma > major || (ma == major && mi >= minor);
  }
}
