package io.egressservice.lifecycle;

import com.sun.jna.Library;
import com.sun.jna.Native;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.OptionalInt;

/**
 * Lowers the CPU priority of the calling thread alone, for work that must never take CPU from a reconcile (the
 * Events a start writes by the thousand). Java's thread priorities do nothing on Linux; a thread's nice value does:
 * on Linux {@code setpriority(PRIO_PROCESS, tid)} applies to that one thread (setpriority(2), NOTES), and the
 * scheduler weighs a nice 10 thread about a tenth of a nice 0 one when both want the CPU. Raising one's own nice
 * value needs no capability. {@code /proc/thread-self} is Linux 3.17 or later.
 */
public final class LowPriority {
  /** Nice steps of background work below the rest: ~10 % of a CPU against a busy thread, all of an idle one. */
  public static final int BACKGROUND = 10;
  /** The largest nice value Linux has. */
  static final int LOWEST = 19;
  private static final int PRIO_PROCESS = 0;

  interface Libc extends Library {
    int setpriority(int which, int who, int prio);
  }

  private LowPriority() {}

  /**
   * Lowers the calling thread's priority by {@code steps} nice values from where it is (at most to 19): relative, so
   * that in a process started at nice 10 the background runs at 19, not at the process's own 10, and a process
   * with CAP_SYS_NICE is never raised. False where the kernel or C library does not allow it (then unchanged).
   */
  public static boolean lowerCurrentThreadBy(int steps) {
    OptionalInt tid = currentTid();
    OptionalInt now = currentNice();
    if (tid.isEmpty() || now.isEmpty()) {
      return false;
    }
    int nice = Math.min(LOWEST, now.getAsInt() + steps);
    try {
      return Native.load("c", Libc.class).setpriority(PRIO_PROCESS, tid.getAsInt(), nice) == 0;
    } catch (UnsatisfiedLinkError e) {
      return false;
    }
  }

  /** The calling thread's nice value, from /proc (field 19 of stat). */
  public static OptionalInt currentNice() {
    try {
      String stat = Files.readString(Path.of("/proc/thread-self/stat"));
      String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
      return OptionalInt.of(Integer.parseInt(f[16])); // fields from the 3rd: nice is the 19th
    } catch (IOException | RuntimeException e) {
      return OptionalInt.empty();
    }
  }

  private static OptionalInt currentTid() {
    try {
      String self = Files.readSymbolicLink(Path.of("/proc/thread-self")).toString(); // "PID/task/TID"
      return OptionalInt.of(Integer.parseInt(self.substring(self.lastIndexOf('/') + 1)));
    } catch (IOException | RuntimeException e) {
      return OptionalInt.empty();
    }
  }
}
