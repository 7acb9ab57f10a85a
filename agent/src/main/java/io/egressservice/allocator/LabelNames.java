package io.egressservice.allocator;

import io.egressservice.model.ObjectRef;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * Kubernetes label syntax (apimachinery {@code IsQualifiedName} / {@code IsValidLabelValue}) and the node label
 * that marks an EgressService's host. Pure.
 */
public final class LabelNames {
  /** Prefix of the host label, as in OVN-Kubernetes ({@code egressSVCLabelPrefix}). */
  public static final String HOST_LABEL_PREFIX = io.egressservice.plan.HostLabels.PREFIX;

  private static final int MAX_NAME = 63;
  private static final int MAX_PREFIX = 253;
  private static final Pattern NAME = Pattern.compile("([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]");
  private static final Pattern DNS_SUBDOMAIN =
      Pattern.compile("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");

  private LabelNames() {}

  /** The host label key {@code egress-service.k8s.ovn.org/<namespace>-<name>}, whether valid or not. */
  public static String hostLabelKey(ObjectRef ref) {
    return io.egressservice.plan.HostLabels.key(ref);
  }

  /** True when {@code key} carries our prefix (whoever wrote it). */
  public static boolean isHostLabel(String key) {
    return key.startsWith(HOST_LABEL_PREFIX + "/");
  }

  /** Why {@code key} is not a valid label key (qualified name), or empty when it is. */
  public static Optional<String> keyProblem(String key) {
    if (key == null || key.isEmpty()) {
      return Optional.of("label key is empty");
    }
    String name = key;
    int slash = key.indexOf('/');
    if (slash >= 0) {
      String prefix = key.substring(0, slash);
      name = key.substring(slash + 1);
      if (prefix.isEmpty() || prefix.length() > MAX_PREFIX || !DNS_SUBDOMAIN.matcher(prefix).matches()) {
        return Optional.of("label key \"" + key + "\": prefix must be a DNS subdomain of at most 253 characters");
      }
    }
    if (name.isEmpty() || name.length() > MAX_NAME) {
      return Optional.of("label key \"" + key + "\": name part must be 1 to 63 characters, is " + name.length());
    }
    if (!NAME.matcher(name).matches()) {
      return Optional.of("label key \"" + key + "\": name part must consist of alphanumerics, '-', '_' or '.',"
          + " and start and end with an alphanumeric");
    }
    return Optional.empty();
  }

  /** Why {@code value} is not a valid label value, or empty when it is ("" is valid). */
  public static Optional<String> valueProblem(String value) {
    if (value == null || value.isEmpty()) {
      return Optional.empty();
    }
    if (value.length() > MAX_NAME) {
      return Optional.of("label value \"" + value + "\" is longer than 63 characters");
    }
    if (!NAME.matcher(value).matches()) {
      return Optional.of("label value \"" + value + "\" must consist of alphanumerics, '-', '_' or '.',"
          + " and start and end with an alphanumeric");
    }
    return Optional.empty();
  }
}
