package io.egressservice.testbed.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.testbed.Cluster;
import io.egressservice.testing.Privileges;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.ovn.k8s.v1.EgressServiceSpec.SourceIPBy;

/**
 * A failed soak keeps, in the one directory it names: every process's log, the API's objects and every node's
 * kernel state of ours as they were at the violation, and the fault timeline.
 */
class EvidenceTest {
  @TempDir Path tmp;

  @BeforeEach
  void privileged() {
    Privileges.assumeNetAdmin();
  }

  @Test
  void aViolationKeepsLogsObjectsKernelsAndTimelineInOneDirectory() throws IOException {
    List<String> said = new ArrayList<>();
    try (Cluster c = Cluster.builder().node("node-a", 1, 1).withoutAgents().start()) {
      c.api().applyEgressService("kept-svc", SourceIPBy.LOADBALANCERIP, "", Optional.empty());
      c.node("node-a").netns().nft("table inet " + JudgedKernelState.TABLE + " {\n"
          + "  map snat_v4 { type ipv4_addr : ipv4_addr; elements = { 10.128.0.7 : 5.5.5.9 } }\n"
          + "}\n");
      Files.writeString(c.dir().resolve("allocator-0.log"), "the allocator's last words\n");
      Nemesis.Injected fault = new Nemesis.Injected(Fault.API_HANG, "9 s", Instant.now(), 0, 9_000_000_000L,
          true, 12);
      Evidence evidence = new Evidence(tmp, 77, "source", c, () -> List.of(fault), said::add);

      evidence.snapshot("after API_HANG 9 s not converged in 60 s");
      c.node("node-a").netns().nft("delete table inet " + JudgedKernelState.TABLE + "\n"); // the state moves on
      Path dir = evidence.finish(List.of(new Soak.Violation(3, "after API_HANG 9 s not converged")), "the table");

      assertThat(dir).startsWith(tmp).isEqualTo(evidence.dir());
      assertThat(said).anyMatch(line -> line.contains(dir.toString()));
      assertThat(dir.resolve("allocator-0.log")).hasContent("the allocator's last words");
      assertThat(Files.readString(dir.resolve("timeline.txt"))).contains("API_HANG").contains("9 s");
      assertThat(Files.readString(dir.resolve("violations.txt"))).contains("(3) after API_HANG 9 s not converged");
      Path moment = dir.resolve("snapshot-1");
      assertThat(Files.readString(moment.resolve("kernel-node-a.txt")))
          .as("the kernel as it was at the violation, not at the end").contains("10.128.0.7 : 5.5.5.9");
      assertThat(Files.readString(moment.resolve("egressservices.json"))).contains("kept-svc");
      assertThat(moment.resolve("endpointslices.json")).exists();
      assertThat(moment.resolve("nodes.json")).exists();
      assertThat(Files.readString(moment.resolve("timeline.txt"))).contains("API_HANG");
    }
  }
}
