package io.egressservice.health;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Which process listens on a TCP port, from {@code /proc}: the listening sockets' inodes in {@code net/tcp} and
 * {@code net/tcp6} of the calling thread's network namespace, then the process whose {@code fd/} links to one.
 * Best effort: a process in another PID namespace (a pod without {@code hostPID} sees only its own) is not found.
 */
public final class PortHolder {
  private static final String LISTEN = "0A";

  private final Path proc;

  /** Over {@code proc} (tests: a fake tree). */
  PortHolder(Path proc) {
    this.proc = proc;
  }

  public static PortHolder system() {
    return new PortHolder(Path.of("/proc"));
  }

  /**
   * "pid 123 (nginx)" for each process listening on {@code port}, or a sentence saying it is unknown. The network
   * namespace is the calling thread's: call it from a thread inside the namespace whose port is taken.
   */
  public String describe(int port) {
    Set<String> inodes = listeningInodes(port);
    if (inodes.isEmpty()) {
      return "unknown (no listening socket on port " + port + " in /proc/net/tcp{,6}: it may be bound but not "
          + "listening, or the address may be missing)";
    }
    List<String> holders = processesWith(inodes);
    if (holders.isEmpty()) {
      return "unknown (a process outside this PID namespace; on the node: ss -ltnp 'sport = :" + port + "')";
    }
    return String.join(", ", holders);
  }

  /** Inodes of the sockets listening on {@code port}, any address, both families. */
  Set<String> listeningInodes(int port) {
    String hexPort = String.format(":%04X", port);
    Set<String> out = new HashSet<>();
    Path net = Files.isDirectory(proc.resolve("thread-self/net")) ? proc.resolve("thread-self/net")
        : proc.resolve("self/net");
    for (String table : List.of("tcp", "tcp6")) {
      List<String> lines;
      try {
        lines = Files.readAllLines(net.resolve(table));
      } catch (IOException e) {
        continue; // no IPv6, or no /proc: best effort
      }
      for (String line : lines.subList(Math.min(1, lines.size()), lines.size())) {
        // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
        String[] f = line.trim().split("\\s+");
        if (f.length > 9 && f[1].endsWith(hexPort) && f[3].equals(LISTEN) && !f[9].equals("0")) {
          out.add(f[9]);
        }
      }
    }
    return out;
  }

  private List<String> processesWith(Set<String> inodes) {
    Set<String> links = new HashSet<>();
    inodes.forEach(i -> links.add("socket:[" + i + "]"));
    List<String> out = new ArrayList<>();
    try (DirectoryStream<Path> pids = Files.newDirectoryStream(proc, p -> p.getFileName().toString().matches("\\d+"))) {
      for (Path pid : pids) {
        if (holds(pid, links)) {
          out.add("pid " + pid.getFileName() + " (" + command(pid) + ")");
        }
      }
    } catch (IOException e) {
      // best effort
    }
    out.sort(null);
    return out;
  }

  private static boolean holds(Path pid, Set<String> links) {
    try (DirectoryStream<Path> fds = Files.newDirectoryStream(pid.resolve("fd"))) {
      for (Path fd : fds) {
        try {
          if (links.contains(Files.readSymbolicLink(fd).toString())) {
            return true;
          }
        } catch (IOException e) {
          // closed meanwhile
        }
      }
    } catch (IOException e) {
      // gone, or not ours to read
    }
    return false;
  }

  private static String command(Path pid) {
    try {
      return Files.readString(pid.resolve("comm")).trim();
    } catch (IOException e) {
      return "unknown";
    }
  }
}
