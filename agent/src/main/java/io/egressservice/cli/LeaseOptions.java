package io.egressservice.cli;

import io.egressservice.allocator.AllocatorConfig;
import java.time.Duration;
import picocli.CommandLine.Option;

/**
 * The allocator's leader-election timings ({@code run} with {@code --allocator=true}, and {@code allocator}). The
 * defaults are kube-vip's: a leader that dies (with the host it watched, say) is replaced within about 5-7 s, at
 * the price of about one Lease write a second by the leader (deploy/README.md, "The Lease and its API cost").
 */
public final class LeaseOptions {
  @FromEnvironment
  @Option(names = "--lease-duration", defaultValue = "5s",
      converter = RunCommand.DurationConverter.class,
      description = "How long the allocator's Lease holds after its last renewal: a follower takes over when it "
          + "has passed; whole seconds, as the Lease stores it (default ${DEFAULT-VALUE}).")
  Duration leaseDuration;

  @FromEnvironment
  @Option(names = "--lease-renew-deadline", defaultValue = "3s",
      converter = RunCommand.DurationConverter.class,
      description = "How long the leader keeps trying to renew before it stops writing; shorter than the lease "
          + "duration (default ${DEFAULT-VALUE}).")
  Duration renewDeadline;

  @FromEnvironment
  @Option(names = "--lease-retry-period", defaultValue = "1s",
      converter = RunCommand.DurationConverter.class,
      description = "How often the leader renews and a follower tries to acquire (followers wait up to 2.2 times "
          + "this, jittered); shorter than the renew deadline (default ${DEFAULT-VALUE}).")
  Duration retryPeriod;

  /** {@code config} with these timings; a user error names the flag that is wrong. */
  AllocatorConfig apply(AllocatorConfig config) {
    if (leaseDuration.isNegative() || leaseDuration.toMillis() < 1000 || leaseDuration.toMillis() % 1000 != 0) {
      throw new Main.UserError("--lease-duration must be a whole number of seconds, at least 1s (the Lease stores "
          + "seconds), not " + leaseDuration.toMillis() + " ms");
    }
    if (retryPeriod.isNegative() || retryPeriod.isZero()) {
      throw new Main.UserError("--lease-retry-period must be positive");
    }
    if (renewDeadline.compareTo(leaseDuration) >= 0) {
      throw new Main.UserError("--lease-renew-deadline (" + renewDeadline.toMillis() + " ms) must be shorter than "
          + "--lease-duration (" + leaseDuration.toMillis() + " ms): the old leader must stop writing before "
          + "another replica may take over");
    }
    if (retryPeriod.compareTo(renewDeadline) >= 0) {
      throw new Main.UserError("--lease-retry-period (" + retryPeriod.toMillis() + " ms) must be shorter than "
          + "--lease-renew-deadline (" + renewDeadline.toMillis() + " ms)");
    }
    return config.withLease(leaseDuration, renewDeadline, retryPeriod);
  }
}
