package io.egressservice.cluster;

import io.egressservice.testing.Privileges;
import java.util.function.Supplier;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * One scenario for all tests of a class ({@code @RegisterExtension static}): started before them (the class is
 * skipped without root) and closed after them, as the cluster tests share their expensive set-up.
 */
final class PerClass<T extends AutoCloseable> implements BeforeAllCallback, AfterAllCallback {
  private final Supplier<T> start;
  private T started;

  PerClass(Supplier<T> start) {
    this.start = start;
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    Privileges.assumeNetAdmin();
    started = start.get();
  }

  /** What the class's tests share. */
  T get() {
    return started;
  }

  @Override
  public void afterAll(ExtensionContext context) throws Exception {
    if (started != null) {
      started.close();
      started = null;
    }
  }
}
