package io.egressservice.probe;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class KernelVersionTest {
  @Test
  void releasesCompareByMajorThenMinorWhateverTheirSuffix() {
    assertThat(KernelVersion.atLeast("6.18.44-fc-v1272", 5, 8)).isTrue();
    assertThat(KernelVersion.atLeast("5.14.0-427.el9.x86_64", 5, 8)).isTrue();
    assertThat(KernelVersion.atLeast("5.8.0", 5, 8)).isTrue();
    assertThat(KernelVersion.atLeast("5.4.0-150-generic", 5, 8)).isFalse();
    assertThat(KernelVersion.atLeast("4.19.0", 5, 8)).isFalse();
  }

  @Test
  void anUnreadableReleaseCountsAsNewEnough() {
    assertThat(KernelVersion.atLeast("unknown", 5, 8)).isTrue();
  }
}
