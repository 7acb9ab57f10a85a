package io.egressservice.dataplane;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;

/**
 * {@link RtTables} read again only when one of its files changed: a stat of each location (and of the
 * {@code *.conf} files in its directories) per call, a read of the files only when a modification time,
 * size or the set of files moved.
 */
final class RtTablesCache {
  private final List<Path> locations;
  private List<String> stamp;
  private RtTables tables;
  private long reads;

  RtTablesCache(List<Path> locations) {
    this.locations = List.copyOf(locations);
  }

  synchronized RtTables current() {
    List<String> now = stamp();
    if (tables == null || !now.equals(stamp)) {
      tables = RtTables.read(locations);
      stamp = now;
      reads++;
    }
    return tables;
  }

  /** How often the files were read, for tests. */
  synchronized long reads() {
    return reads;
  }

  private List<String> stamp() {
    List<String> out = new ArrayList<>();
    for (Path location : locations) {
      if (Files.isDirectory(location)) {
        out.add(location + "/");
        List<Path> confs = new ArrayList<>();
        try (DirectoryStream<Path> dir = Files.newDirectoryStream(location, "*.conf")) {
          dir.forEach(confs::add);
        } catch (IOException e) {
          out.add("?");
        }
        confs.sort(null);
        confs.forEach(c -> out.add(stampOf(c)));
      } else {
        out.add(stampOf(location));
      }
    }
    return out;
  }

  private static String stampOf(Path file) {
    try {
      BasicFileAttributes a = Files.readAttributes(file, BasicFileAttributes.class);
      return file + " " + a.lastModifiedTime().toMillis() + " " + a.size() + " " + a.fileKey();
    } catch (IOException e) {
      return file + " -";
    }
  }
}
