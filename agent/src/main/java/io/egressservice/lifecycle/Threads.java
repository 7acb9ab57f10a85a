package io.egressservice.lifecycle;

import java.util.Arrays;
import java.util.Optional;

/** Finds a live thread by name, for an essential thread a component starts but does not hand out. */
public final class Threads {
  private Threads() {}

  /** The live thread called exactly {@code name}, if there is one (the first, if several are). */
  public static Optional<Thread> named(String name) {
    ThreadGroup root = Thread.currentThread().getThreadGroup();
    while (root.getParent() != null) {
      root = root.getParent();
    }
    for (int attempt = 0; attempt < 4; attempt++) {
      Thread[] threads = new Thread[root.activeCount() * 2 + 16];
      int n = root.enumerate(threads, true);
      if (n < threads.length) {
        return Arrays.stream(threads, 0, n).filter(t -> t.getName().equals(name) && t.isAlive()).findFirst();
      }
    }
    return Optional.empty();
  }
}
