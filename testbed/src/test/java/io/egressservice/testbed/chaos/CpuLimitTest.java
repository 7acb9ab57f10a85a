package io.egressservice.testbed.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.testing.Privileges;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The soak's CPU limit holds a process to its quota while applied, and lets it go when lifted. */
class CpuLimitTest {
  @BeforeEach
  void privileged() {
    Privileges.assumeNetAdmin();
  }

  @Test
  void aBusyProcessGetsNoMoreThanItsQuotaAndIsFreedAfter() throws Exception {
    // bounded in count (some seconds of CPU unlimited) as well as killed at the end
    Process busy = new ProcessBuilder("sh", "-c", "i=0; while [ $i -lt 100000000 ]; do i=$((i+1)); done").start();
    try {
      ProcessHandle shell = busy.toHandle();
      String name = "cpulimit-test-" + ProcessHandle.current().pid();
      CpuLimit limit = CpuLimit.apply(shell.pid(), name, 50);
      assertThat(Files.readString(Path.of("/proc/" + shell.pid() + "/cgroup"))).as("the process's cgroups")
          .contains(name);
      Duration before = cpu(shell);
      Thread.sleep(2000);
      Duration used = cpu(shell).minus(before);
      long throttled = limit.throttledPeriods();
      limit.close();

      assertThat(used).as("CPU used in 2 s at 50 millicores (100 ms at most, some slack for the clock tick)")
          .isLessThan(Duration.ofMillis(250));
      assertThat(throttled).as("throttled periods").isPositive();
      assertThat(Files.readString(Path.of("/proc/" + shell.pid() + "/cgroup")))
          .as("the process's cgroups once the limit is lifted").doesNotContain(name);
    } finally {
      busy.destroyForcibly();
      busy.waitFor(10, TimeUnit.SECONDS);
    }
  }

  private static Duration cpu(ProcessHandle p) {
    return p.info().totalCpuDuration().orElseThrow();
  }
}
