package io.egressservice.dataplane;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The drain's mark value: within the mask, never one of the node's network marks. */
class FlowDrainTest {
  @Test
  void theDrainMarkIsTheHighestValueOfTheMaskNoNetworkUses() {
    assertThat(FlowDrain.freeMark(0x3f000000L, List.of())).contains(0x3f000000L);
    assertThat(FlowDrain.freeMark(0x3f000000L, List.of(0x3f000000L, 0x01000000L))).contains(0x3e000000L);
    assertThat(FlowDrain.freeMark(0x3L, List.of(1L, 2L, 3L))).isEmpty();
  }
}
