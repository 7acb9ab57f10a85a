package io.egressservice.plan;

/**
 * The one place the grant and network messages put a tenant-written string (a namespace, a name, a network) into
 * text: quoted, so a reader sees where it starts and ends. Escaping control characters belongs here too, once the
 * project's escaping utility exists (route {@link #quoted} through it).
 */
public final class TenantText {
  private TenantText() {}

  public static String quoted(String tenantWritten) {
    return "'" + tenantWritten + "'";
  }
}
