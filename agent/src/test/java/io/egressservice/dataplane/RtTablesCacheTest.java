package io.egressservice.dataplane;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** rt_tables is read again only when one of its files changed (a stat per call, not a read). */
class RtTablesCacheTest {
  @TempDir Path dir;

  @Test
  void readsAgainOnlyWhenAFileChangesOrAppears() throws IOException {
    Path main = dir.resolve("rt_tables");
    Path confs = Files.createDirectory(dir.resolve("rt_tables.d"));
    Files.writeString(main, "100 blue\n");
    RtTablesCache cache = new RtTablesCache(List.of(main, confs));

    assertThat(cache.current().table("blue")).hasValue(100);
    assertThat(cache.current().table("blue")).hasValue(100);
    assertThat(cache.reads()).isEqualTo(1);

    Files.writeString(main, "100 blue\n200 green\n");
    Files.setLastModifiedTime(main, FileTime.fromMillis(System.currentTimeMillis() + 5_000));
    assertThat(cache.current().table("green")).hasValue(200);
    assertThat(cache.reads()).isEqualTo(2);

    Files.writeString(confs.resolve("extra.conf"), "300 red\n");
    assertThat(cache.current().table("red")).hasValue(300);
    assertThat(cache.reads()).isEqualTo(3);
    assertThat(cache.current().table("red")).hasValue(300);
    assertThat(cache.reads()).isEqualTo(3);
  }
}
