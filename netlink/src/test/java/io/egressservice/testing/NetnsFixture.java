package io.egressservice.testing;

import io.egressservice.netlink.NetnsThread;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The set-up of the kernel tests that need one namespace ({@code @RegisterExtension}): per test a throwaway
 * {@link Netns} (the test is skipped without root), a thread in it when asked for, and whatever the test opens in
 * it. After the test those close newest first and the namespace last, so that nothing outlives the namespace it
 * talks to.
 */
public final class NetnsFixture implements BeforeEachCallback, AfterEachCallback {
  private final String prefix;
  private final List<AutoCloseable> toClose = new ArrayList<>();
  private Netns ns;
  private NetnsThread thread;

  /** A namespace named {@code esa-<prefix>-<random>}. */
  public NetnsFixture(String prefix) {
    this.prefix = prefix;
  }

  @Override
  public void beforeEach(ExtensionContext context) {
    Privileges.assumeNetAdmin();
    ns = Netns.create(prefix);
  }

  /** The test's namespace. */
  public Netns ns() {
    return ns;
  }

  /** A thread in the namespace, entered on first use and closed after the test. */
  public NetnsThread thread() {
    if (thread == null) {
      thread = closeLater(NetnsThread.enter(Optional.of(ns.name())));
    }
    return thread;
  }

  /** {@code resource}, closed after the test, before anything opened earlier and before the namespace. */
  public <T extends AutoCloseable> T closeLater(T resource) {
    toClose.add(resource);
    return resource;
  }

  @Override
  public void afterEach(ExtensionContext context) throws Exception {
    try {
      closeAll();
    } finally {
      toClose.clear();
      thread = null;
      if (ns != null) {
        ns.close();
        ns = null;
      }
    }
  }

  private void closeAll() throws Exception {
    Exception first = null;
    for (int i = toClose.size() - 1; i >= 0; i--) {
      try {
        toClose.get(i).close();
      } catch (Exception e) {
        if (first == null) {
          first = e;
        } else {
          first.addSuppressed(e);
        }
      }
    }
    if (first != null) {
      throw first;
    }
  }
}
