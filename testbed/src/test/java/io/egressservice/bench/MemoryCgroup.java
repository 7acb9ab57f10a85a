package io.egressservice.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A memory cgroup of the bench's own with a limit, for the real agent process, so that its JVM sizes its heap
 * from the limit as in a pod. cgroup v2 where the memory controller is there ({@code /sys/fs/cgroup/<name>},
 * {@code memory.max}, {@code memory.peak}, {@code memory.events}); else v1, as a child of the bench's own memory
 * cgroup ({@code memory.limit_in_bytes}, {@code memory.max_usage_in_bytes}, {@code memory.oom_control}). The JVM
 * reads either (JDK 17). Names start with {@code -Dbench.cgroupPrefix} (bench/scale.sh passes one with its pid,
 * and removes what is left of them however the bench ended).
 */
final class MemoryCgroup implements AutoCloseable {
  private static final Path ROOT = Path.of("/sys/fs/cgroup");
  private static final AtomicInteger COUNT = new AtomicInteger();

  private final Path dir;
  private final boolean v2;

  private MemoryCgroup(Path dir, boolean v2) {
    this.dir = dir;
    this.v2 = v2;
  }

  static MemoryCgroup create(long limitBytes) throws IOException {
    String name = System.getProperty("bench.cgroupPrefix", "esa-scale-" + ProcessHandle.current().pid()) + "-"
        + COUNT.incrementAndGet();
    Path controllers = ROOT.resolve("cgroup.controllers");
    boolean v2 = Files.isReadable(controllers) && List.of(Files.readString(controllers).trim().split("\\s+"))
        .contains("memory");
    Path dir;
    if (v2) {
      dir = ROOT.resolve(name);
      Files.createDirectory(dir);
      write(dir.resolve("memory.max"), Long.toString(limitBytes));
      write(dir.resolve("memory.swap.max"), "0");
    } else {
      Path v1 = ROOT.resolve("memory");
      if (!Files.isDirectory(v1)) {
        throw new IllegalStateException("no memory cgroup controller (neither v2 nor v1) under " + ROOT);
      }
      dir = v1.resolve(ownV1Path()).resolve(name);
      Files.createDirectory(dir);
      write(dir.resolve("memory.limit_in_bytes"), Long.toString(limitBytes));
    }
    return new MemoryCgroup(dir, v2);
  }

  /** The bench's own memory cgroup (v1), relative: a child of it stays inside whatever holds the bench. */
  private static String ownV1Path() throws IOException {
    for (String line : Files.readAllLines(Path.of("/proc/self/cgroup"))) {
      String[] f = line.split(":", 3);
      if (f.length == 3 && List.of(f[1].split(",")).contains("memory")) {
        return f[2].replaceFirst("^/", "");
      }
    }
    return "";
  }

  private static void write(Path file, String value) throws IOException {
    if (Files.exists(file)) {
      Files.writeString(file, value);
    }
  }

  /** A command prefix: a shell that moves itself into the cgroup, then execs the rest (same pid). */
  List<String> launcher() {
    return List.of("sh", "-c", "echo $$ > '" + dir.resolve("cgroup.procs") + "' && exec \"$@\"", "sh");
  }

  String describe() {
    return (v2 ? "cgroup v2 " : "cgroup v1 ") + dir;
  }

  /** The cgroup's peak memory use (v2 memory.peak where the kernel has it, v1 max_usage_in_bytes). */
  Optional<Long> peakBytes() {
    return readLong(dir.resolve(v2 ? "memory.peak" : "memory.max_usage_in_bytes"));
  }

  /** How many processes the kernel's OOM killer ended in the cgroup, where the kernel says it. */
  Optional<Long> oomKills() {
    try {
      Path f = dir.resolve(v2 ? "memory.events" : "memory.oom_control");
      for (String line : Files.readAllLines(f)) {
        if (line.startsWith("oom_kill ")) {
          return Optional.of(Long.parseLong(line.substring("oom_kill ".length()).trim()));
        }
      }
    } catch (IOException | RuntimeException e) {
      // not reported by this kernel
    }
    return Optional.empty();
  }

  private static Optional<Long> readLong(Path f) {
    try {
      return Optional.of(Long.parseLong(Files.readString(f).trim()));
    } catch (IOException | RuntimeException e) {
      return Optional.empty();
    }
  }

  /** Removes the cgroup once its processes (the agent, stopped by the caller before) are gone; bounded. */
  @Override
  public void close() {
    for (int i = 0; i < 100 && Files.exists(dir); i++) {
      try {
        Files.delete(dir); // rmdir: only an empty cgroup goes
      } catch (IOException e) {
        try {
          Thread.sleep(100);
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          break;
        }
      }
    }
    if (Files.exists(dir)) {
      System.err.println("could not remove " + dir + " (processes left in it?)");
    }
  }
}
