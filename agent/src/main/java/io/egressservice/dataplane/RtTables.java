package io.egressservice.dataplane;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

/**
 * Routing table names as iproute2 reads them: {@code /etc/iproute2/rt_tables}, then
 * {@code /etc/iproute2/rt_tables.d/*.conf}, and iproute2 6.x's defaults in {@code /usr/share/iproute2}.
 * Lines are {@code <id> <name>}; {@code #} starts a comment.
 */
public final class RtTables {
  public static final List<Path> DEFAULT_FILES = List.of(
      Path.of("/etc/iproute2/rt_tables"), Path.of("/etc/iproute2/rt_tables.d"),
      Path.of("/usr/share/iproute2/rt_tables"), Path.of("/usr/share/iproute2/rt_tables.d"),
      Path.of("/usr/lib/iproute2/rt_tables"));

  private final Map<String, Long> byName;
  private final List<Path> read;

  private RtTables(Map<String, Long> byName, List<Path> read) {
    this.byName = Map.copyOf(byName);
    this.read = List.copyOf(read);
  }

  /** Reads the given files and directories ({@code *.conf} inside); missing ones are skipped. The first definition of a name wins. */
  public static RtTables read(List<Path> locations) {
    Map<String, Long> names = new HashMap<>();
    List<Path> read = new ArrayList<>();
    for (Path location : locations) {
      if (Files.isDirectory(location)) {
        List<Path> confs = new ArrayList<>();
        try (DirectoryStream<Path> dir = Files.newDirectoryStream(location, "*.conf")) {
          dir.forEach(confs::add);
        } catch (IOException e) {
          continue;
        }
        confs.sort(null);
        for (Path conf : confs) {
          readFile(conf, names, read);
        }
      } else if (Files.isRegularFile(location)) {
        readFile(location, names, read);
      }
    }
    return new RtTables(names, read);
  }

  private static void readFile(Path file, Map<String, Long> names, List<Path> read) {
    List<String> lines;
    try {
      lines = Files.readAllLines(file);
    } catch (IOException e) {
      return;
    }
    read.add(file);
    for (String line : lines) {
      int hash = line.indexOf('#');
      String content = (hash >= 0 ? line.substring(0, hash) : line).trim();
      if (content.isEmpty()) {
        continue;
      }
      String[] fields = content.split("\\s+");
      if (fields.length < 2) {
        continue;
      }
      try {
        long id = fields[0].startsWith("0x") ? Long.parseLong(fields[0].substring(2), 16) : Long.parseLong(fields[0]);
        if (id >= 0 && id <= 0xFFFFFFFFL) {
          names.putIfAbsent(fields[1], id);
        }
      } catch (NumberFormatException e) {
        // iproute2 ignores such lines too.
      }
    }
  }

  public OptionalLong table(String name) {
    Long id = byName.get(name);
    return id == null ? OptionalLong.empty() : OptionalLong.of(id);
  }

  /** The files that were read, for messages. */
  public List<Path> filesRead() {
    return read;
  }
}
