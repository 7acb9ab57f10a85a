package io.egressservice.probe;

import io.egressservice.netlink.NetnsThread;
import java.time.Duration;
import java.util.Optional;

/**
 * Run by {@link NodeNamespaceCheckKernelTest} in a child process in the test's namespace: takes the probe lock as a
 * probe does, says {@code held}, and keeps it until its input closes or it is killed.
 */
public final class ProbeLockHolderMain {
  private ProbeLockHolderMain() {}

  public static void main(String[] args) throws Exception {
    try (NetnsThread thread = NetnsThread.enter(Optional.empty());
        ProbeLock lock = ProbeLock.take(thread, Duration.ZERO)) {
      System.out.println("held");
      System.out.flush();
      while (System.in.read() >= 0) {
        // holds the lock until the test closes our input (or kills us)
      }
    }
  }
}
