package io.egressservice.plan;

/**
 * The one place the grant and network messages put a tenant-written string (a namespace, a name, a network) into
 * text: quoted, so a reader sees where it starts and ends. Control characters are not escaped here: every sink
 * (Events, logs, the commands' text output) escapes with {@code io.egressservice.text.Printable} where it prints,
 * and JSON carries the exact value, so escaping here would print them escaped twice.
 */
public final class TenantText {
  private TenantText() {}

  public static String quoted(String tenantWritten) {
    return "'" + tenantWritten + "'";
  }
}
