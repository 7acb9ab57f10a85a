package io.egressservice.health;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Who listens on a port, from the real /proc and from a fake one. */
class PortHolderTest {
  @Test
  void namesTheProcessListeningOnAPort() throws Exception {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      String comm = Files.readString(Path.of("/proc/self/comm")).trim();
      assertThat(PortHolder.system().describe(s.getLocalPort()))
          .isEqualTo("pid " + ProcessHandle.current().pid() + " (" + comm + ")");
    }
  }

  @Test
  void aPortNobodyListensOnIsUnknown() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    assertThat(PortHolder.system().describe(port)).startsWith("unknown (no listening socket on port " + port);
  }

  /** A socket whose owner this process cannot see (another PID namespace): said so, with where to look. */
  @Test
  void aHolderOutsideThisPidNamespaceIsUnknownWithAHint(@TempDir Path proc) throws Exception {
    Path net = Files.createDirectories(proc.resolve("self/net"));
    Files.writeString(net.resolve("tcp"), "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt"
        + "   uid  timeout inode\n"
        + "   0: 00000000:24F8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 424242 1 0 100 0 0 10 0\n");
    Files.createDirectories(proc.resolve("17/fd"));
    Files.writeString(proc.resolve("17/comm"), "sleep\n");
    assertThat(new PortHolder(proc).listeningInodes(9464)).containsExactly("424242");
    assertThat(new PortHolder(proc).describe(9464)).startsWith("unknown (a process outside this PID namespace")
        .contains("ss -ltnp 'sport = :9464'");
  }
}
