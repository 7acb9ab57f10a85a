package io.egressservice.nft;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.ip.IpPrefix;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The drain table in a throwaway namespace, with {@code nft list} as the oracle. */
class DrainNftablesNetnsTest {
  @RegisterExtension
  final NftNamespace nft = new NftNamespace("drain");
  private DrainNftables drain;

  @BeforeEach
  void setUp() {
    drain = new DrainNftables(nft.client());
  }

  @Test
  void marksOnlyTheSourcesConfirmedFlowsWithoutSnatInTheMasksBitsAndExpires() {
    drain.write(List.of(IpPrefix.parse("10.128.2.5"), IpPrefix.parse("fd10:128:2::5")), 0x3f000000L, 0x3e000000L,
        Duration.ofSeconds(10));
    String listed = nft.ns().exec("nft", "list", "table", "inet", DrainNftables.TABLE);
    assertThat(listed).contains("10.128.2.5 timeout 10s", "fd10:128:2::5 timeout 10s",
        "hook prerouting priority mangle + 10",
        "ip saddr @sources_v4 ct direction original ct status confirmed / confirmed,snat meta mark set meta mark & 0x",
        "ip6 saddr @sources_v6 ct direction original ct status confirmed / confirmed,snat meta mark set meta mark & 0x");
    // nft prints an equivalent mask of its own (0xfeffffff where we wrote 0xc0ffffff: the value's bits are set anyway):
    // what counts is that only the mask's bits change and they end as the value.
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("meta mark & 0x([0-9a-f]+) \\| 0x([0-9a-f]+)")
        .matcher(listed);
    int statements = 0;
    while (m.find()) {
      long and = Long.parseLong(m.group(1), 16);
      long or = Long.parseLong(m.group(2), 16);
      assertThat(or).isEqualTo(0x3e000000L);
      assertThat((and | or) & 0xffffffffL).as("bits kept outside the mask").isEqualTo(0xc0ffffffL | 0x3e000000L);
      statements++;
    }
    assertThat(statements).isEqualTo(2);
  }

  @Test
  void aSecondWriteReplacesTheFirstAndDeleteLeavesNothing() {
    drain.write(List.of(IpPrefix.parse("10.128.2.5")), 0x3f000000L, 0x3f000000L, Duration.ofSeconds(10));
    drain.write(List.of(IpPrefix.parse("10.128.3.5")), 0x3f000000L, 0x3f000000L, Duration.ofSeconds(10));
    String listed = nft.ns().exec("nft", "list", "table", "inet", DrainNftables.TABLE);
    assertThat(listed).contains("10.128.3.5").doesNotContain("10.128.2.5");
    assertThat(listed.lines().filter(l -> l.contains("meta mark set")).count()).isEqualTo(2);

    drain.delete();
    drain.delete(); // absent: no error
    assertThat(nft.ns().exec("nft", "list", "tables")).doesNotContain(DrainNftables.TABLE);
  }
}
