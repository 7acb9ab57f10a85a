package io.egressservice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.allocator.AllocatorConfig;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** The allocator's lease flags: kube-vip's defaults, and a clear user error for timings that cannot work. */
class LeaseFlagsTest {
  private static AllocatorConfig parse(String... args) {
    LeaseOptions options = new LeaseOptions();
    new CommandLine(options).parseArgs(args);
    return options.apply(AllocatorConfig.defaults());
  }

  @Test
  void theLeaseDefaultsToFiveSecondsRenewedEverySecond() {
    AllocatorConfig c = parse();
    assertThat(c.leaseDuration()).isEqualTo(Duration.ofSeconds(5));
    assertThat(c.renewDeadline()).isEqualTo(Duration.ofSeconds(3));
    assertThat(c.retryPeriod()).isEqualTo(Duration.ofSeconds(1));
  }

  @Test
  void theLeaseCanBeLengthened() {
    AllocatorConfig c = parse("--lease-duration", "15s", "--lease-renew-deadline", "10s", "--lease-retry-period", "2s");
    assertThat(c.leaseDuration()).isEqualTo(Duration.ofSeconds(15));
    assertThat(c.renewDeadline()).isEqualTo(Duration.ofSeconds(10));
    assertThat(c.retryPeriod()).isEqualTo(Duration.ofSeconds(2));
  }

  @Test
  void aRenewDeadlineNotShorterThanTheLeaseIsAUserError() {
    InProcess.Result r = InProcess.run("allocator", "--pod-name", "a", "--lease-duration", "5s",
        "--lease-renew-deadline", "5s");
    assertThat(r.exit()).isEqualTo(Main.EXIT_USER_ERROR);
    assertThat(r.err()).contains("--lease-renew-deadline").contains("must be shorter than --lease-duration");
  }

  @Test
  void aLeaseOfPartSecondsIsAUserError() {
    InProcess.Result r = InProcess.run("allocator", "--pod-name", "a", "--lease-duration", "4500ms");
    assertThat(r.exit()).isEqualTo(Main.EXIT_USER_ERROR);
    assertThat(r.err()).contains("--lease-duration must be a whole number of seconds");
  }
}
