package io.egressservice.netlink;

import com.sun.jna.NativeLibrary;

/** Human text for an errno, from the C library's {@code strerror}. */
final class ErrnoNames {
  private ErrnoNames() {}

  static String describe(int errno) {
    try {
      String text =
          NativeLibrary.getInstance("c").getFunction("strerror").invokeString(new Object[] {errno}, false);
      return text + " (errno " + errno + ")";
    } catch (RuntimeException | UnsatisfiedLinkError e) {
      return "errno " + errno;
    }
  }
}
