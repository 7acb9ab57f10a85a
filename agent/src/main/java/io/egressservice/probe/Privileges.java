package io.egressservice.probe;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** The process's effective capabilities, to tell "no probe possible" (say so) from "no privileges" (silent). */
final class Privileges {
  private static final int CAP_NET_ADMIN = 12;

  private Privileges() {}

  static boolean netAdmin() {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
        if (line.startsWith("CapEff:")) {
          return (Long.parseUnsignedLong(line.substring("CapEff:".length()).trim(), 16) & (1L << CAP_NET_ADMIN)) != 0;
        }
      }
    } catch (IOException | NumberFormatException e) {
      return false;
    }
    return false;
  }
}
