package io.egressservice.logging;

import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * fabric8's mock API server (the demo's and the soak's in-process API server) logs every request at INFO through
 * java.util.logging, which would drown a command that tells its own story on stdout. Here, beside the bridge, because
 * the rest of the code logs through SLF4J alone.
 */
public final class MockServerLogs {
  /** Held: java.util.logging drops the loggers nobody references, and with them the levels set on them. */
  private static final Logger MOCK_SERVER = Logger.getLogger("io.fabric8.mockwebserver");

  private MockServerLogs() {}

  /** From now on only the mock server's warnings and errors. */
  public static void warningsOnly() {
    MOCK_SERVER.setLevel(Level.WARNING);
  }
}
