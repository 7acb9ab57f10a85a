package io.egressservice.objects;

import java.util.Optional;
import java.util.regex.Pattern;

/**
 * The names an API server accepts: what {@code kubectl apply} would refuse is refused in files too, naming the
 * object, rather than planned into something no cluster can hold (a 200-byte Service name, say).
 */
final class KubernetesNames {
  private static final Pattern DNS1123_LABEL = Pattern.compile("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  private static final Pattern DNS1035_LABEL = Pattern.compile("[a-z]([-a-z0-9]*[a-z0-9])?");
  private static final Pattern DNS1123_SUBDOMAIN =
      Pattern.compile("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");

  private KubernetesNames() {}

  /** Why {@code name} is not a valid {@code metadata.name} for {@code kind}, or empty. */
  static Optional<String> nameProblem(String kind, String name) {
    return switch (kind) {
      // A Service's name becomes a DNS label; an EgressService is named after its Service.
      case "Service" -> check("metadata.name", name, DNS1035_LABEL, 63,
          "a DNS-1035 label: lower-case letters, digits and '-', starting with a letter");
      case "EgressService" -> check("metadata.name", name, DNS1035_LABEL, 63,
          "the name of its Service, a DNS-1035 label: lower-case letters, digits and '-', starting with a letter");
      default -> check("metadata.name", name, DNS1123_SUBDOMAIN, 253,
          "a DNS-1123 subdomain: lower-case letters, digits, '-' and '.'");
    };
  }

  /** Why {@code namespace} is not a valid namespace name, or empty. */
  static Optional<String> namespaceProblem(String namespace) {
    return check("metadata.namespace", namespace, DNS1123_LABEL, 63, "a DNS-1123 label: lower-case letters, digits and '-'");
  }

  private static Optional<String> check(String field, String value, Pattern pattern, int max, String what) {
    if (value.length() > max) {
      return Optional.of(field + " is " + value.length() + " characters long; at most " + max + " are allowed (" + what
          + ")");
    }
    if (!pattern.matcher(value).matches()) {
      return Optional.of(field + " '" + value + "' is not " + what);
    }
    return Optional.empty();
  }
}
