package io.egressservice.lifecycle;

/** How {@link FailFast} ends the process; tests pass one that records the status instead. */
@FunctionalInterface
public interface ExitAction {
  void exit(int status);

  /**
   * {@link Runtime#halt}: no shutdown hooks. A process that ran out of memory or lost an essential thread may not
   * be able to run them (they wait for that very thread, or allocate), and the kernel state needs no clean-up:
   * the restarted agent finds it in place.
   */
  static ExitAction halt() {
    return status -> Runtime.getRuntime().halt(status);
  }
}
