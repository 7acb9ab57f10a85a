package io.egressservice.testbed.chaos;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * A CPU limit on one process: a cgroup of its own with a CFS quota, as the kubelet sets for a container's
 * {@code resources.limits.cpu}. The chart sets no CPU limit, only a request of {@value #MILLICORES}m: on a node
 * whose CPUs are all taken, that request is the share the agent gets, so the limit here is that much.
 *
 * <p>cgroup v2 ({@code cpu.max}) where the cpu controller is on the v2 hierarchy; on a hybrid host (v1 controllers,
 * v2 mounted at {@code /sys/fs/cgroup/unified} without the cpu controller, as this machine's) the v1 cpu controller's
 * {@code cpu.cfs_quota_us}/{@code cpu.cfs_period_us}: the same CFS bandwidth control under its older names.
 */
final class CpuLimit implements AutoCloseable {
  /** deploy/daemonset.yaml's and the chart's CPU request of the agent. */
  static final int MILLICORES = 50;
  private static final long PERIOD_US = 100_000;
  private static final Path ROOT = Path.of("/sys/fs/cgroup");

  private final Path group;
  private final Path parentProcs;
  private final long pid;

  private CpuLimit(Path group, Path parentProcs, long pid) {
    this.group = group;
    this.parentProcs = parentProcs;
    this.pid = pid;
  }

  /** Which hierarchy limits the CPU on this host, or why none can. */
  static String mechanism() {
    return v2Root().map(p -> "cgroup v2 cpu.max at " + p)
        .orElse(Files.exists(ROOT.resolve("cpu/cpu.cfs_quota_us")) ? "cgroup v1 cpu.cfs_quota_us (hybrid host: the v2"
            + " hierarchy has no cpu controller)" : "none: no cgroup cpu controller mounted");
  }

  /** Moves {@code pid} (every thread of it) into a new cgroup limited to {@code millicores}. */
  static CpuLimit apply(long pid, String name, int millicores) {
    long quota = PERIOD_US * millicores / 1000;
    try {
      Optional<Path> v2 = v2Root();
      if (v2.isPresent()) {
        Path group = Files.createDirectories(v2.get().resolve("esa-chaos-" + name));
        Files.writeString(group.resolve("cpu.max"), quota + " " + PERIOD_US);
        Files.writeString(group.resolve("cgroup.procs"), Long.toString(pid));
        return new CpuLimit(group, v2.get().resolve("cgroup.procs"), pid);
      }
      Path v1 = ROOT.resolve("cpu");
      if (Files.exists(v1.resolve("cpu.cfs_quota_us"))) {
        Path group = Files.createDirectories(v1.resolve("esa-chaos-" + name));
        Files.writeString(group.resolve("cpu.cfs_period_us"), Long.toString(PERIOD_US));
        Files.writeString(group.resolve("cpu.cfs_quota_us"), Long.toString(quota));
        Files.writeString(group.resolve("cgroup.procs"), Long.toString(pid));
        return new CpuLimit(group, v1.resolve("cgroup.procs"), pid);
      }
    } catch (IOException e) {
      throw new IllegalStateException("cannot limit the CPU of pid " + pid + " (" + mechanism() + "): " + e, e);
    }
    throw new IllegalStateException("cannot limit the CPU of pid " + pid + ": " + mechanism());
  }

  /** The v2 hierarchy whose root offers the cpu controller to its children, if any. */
  private static Optional<Path> v2Root() {
    for (Path p : new Path[] {ROOT, ROOT.resolve("unified")}) {
      try {
        if (Files.exists(p.resolve("cgroup.subtree_control"))
            && Files.readString(p.resolve("cgroup.subtree_control")).contains("cpu")) {
          return Optional.of(p);
        }
      } catch (IOException e) {
        // not this one
      }
    }
    return Optional.empty();
  }

  /** Throttled periods so far (cpu.stat's nr_throttled): proof the limit bit. */
  long throttledPeriods() {
    try {
      for (String line : Files.readAllLines(group.resolve("cpu.stat"))) {
        if (line.startsWith("nr_throttled ")) {
          return Long.parseLong(line.substring("nr_throttled ".length()).trim());
        }
      }
    } catch (IOException | NumberFormatException e) {
      // no figure
    }
    return -1;
  }

  /** The process back where it was (if it still runs), the cgroup removed. */
  @Override
  public void close() {
    try {
      if (ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
        Files.writeString(parentProcs, Long.toString(pid));
      }
    } catch (IOException e) {
      // the process went meanwhile: the group is empty anyway
    }
    for (int i = 0; i < 50; i++) { // an exiting process leaves its cgroup a moment after it is gone
      try {
        Files.deleteIfExists(group);
        return;
      } catch (IOException e) {
        Nemesis.pause(100);
      }
    }
  }
}
