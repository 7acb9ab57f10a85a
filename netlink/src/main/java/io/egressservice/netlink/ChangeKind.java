package io.egressservice.netlink;

/** Whether a notification announced a new (or changed) object or a deleted one. */
public enum ChangeKind {
  NEW,
  DELETED
}
