package io.egressservice.kernel.linux;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.egressservice.kernel.NftException;
import org.junit.jupiter.api.Test;

class NftClientTest {
  @Test
  void commandSummaryAndErrorClassification() throws Exception {
    JsonNode doc = NftClient.JSON.readTree("""
        {"nftables":[{"add":{"table":{"family":"inet","name":"t"}}},
          {"add":{"element":{"family":"inet","table":"t","name":"m","elem":["1.1.1.1","2.2.2.2"]}}},
          {"add":{"element":{"family":"inet","table":"t","name":"n","elem":["1.1.1.3"]}}}]}""");
    assertThat(NftClient.summarize(doc)).isEqualTo("3 commands: add table, add element x2 (3 elements)");
    NftException eperm = NftClient.failure(
        "internal:0:0-0: Error: Could not process rule: Operation not permitted", "1 command: add table", "netns x");
    assertThat(eperm).isInstanceOf(NftException.PermissionDenied.class)
        .hasMessageContaining("CAP_NET_ADMIN is required in netns x");
    NftException enoent = NftClient.failure(
        "internal:0:0-0: Error: Could not process rule: No such file or directory", "s", "netns x");
    assertThat(enoent.isNotFound()).isTrue();
    assertThat(enoent).hasMessageContaining("No such file or directory").hasMessageContaining("(s)");
  }
}
