package io.egressservice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.testbed.Cluster;
import io.egressservice.testing.Privileges;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What {@code apply} prints on a node that steers: each change it made once. */
class ApplyOutputOnClusterTest {
  @TempDir Path tmp;

  @Test
  void applyPrintsEachChangeOnceAlsoTheSteeringDevicesSysctl() throws IOException {
    Privileges.assumeNetAdmin();
    try (Cluster c = Cluster.builder().node("node-a", 2, 1).node("node-b", 1, 1).withoutAgents().start()) {
      Path objects = Files.writeString(tmp.resolve("objects.yaml"), io.egressservice.cluster.ApplyOnClusterTest.objects());
      InProcess.Result r = InProcess.run("apply", "--objects", objects.toString(), "--node", "node-b", "--netns",
          c.node("node-b").netns().name(), "--service-cidr", "172.30.0.0/16,fd02::/112");
      assertThat(r.exit()).as("%s%n%s", r.out(), r.err()).isZero();
      assertThat(Arrays.stream(r.out().split("\n")).filter(l -> l.contains("rp_filter")))
          .as("apply's output:%n%s", r.out()).hasSize(1);
      assertThat(Arrays.stream(r.out().split("\n")).filter(l -> l.trim().startsWith("+ route")).distinct().count())
          .as("each change once:%n%s", r.out())
          .isEqualTo(Arrays.stream(r.out().split("\n")).filter(l -> l.trim().startsWith("+ route")).count());
    }
  }
}
