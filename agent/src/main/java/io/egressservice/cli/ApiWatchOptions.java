package io.egressservice.cli;

import io.egressservice.informers.SilentWatches;
import java.time.Duration;
import picocli.CommandLine.Option;

/** How long a watch may deliver nothing before it is re-opened on a new connection (see SilentWatches). */
public final class ApiWatchOptions {
  @FromEnvironment
  @Option(names = "--api-watch-idle-timeout", hidden = true,
      defaultValue = "90s",
      converter = RunCommand.DurationConverter.class,
      description = "A watch that delivers no event or bookmark for this long is re-opened on a new connection"
          + " (default ${DEFAULT-VALUE}; longer than the API server's bookmark period of about a minute).")
  Duration idle;

  SilentWatches silentWatches() {
    if (idle.isNegative() || idle.isZero()) {
      throw new Main.UserError("--api-watch-idle-timeout must be positive, not " + idle);
    }
    return new SilentWatches(idle);
  }
}
