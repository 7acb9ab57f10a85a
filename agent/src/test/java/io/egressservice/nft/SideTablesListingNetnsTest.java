package io.egressservice.nft;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.ip.IpPrefix;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The three side tables as {@code nft list table} prints them, for fixed inputs: the listings the agent has always
 * written, kept here as text so that a change in how the tables are written (script or libnftables-json) cannot
 * change what the kernel holds.
 */
class SideTablesListingNetnsTest {
  @RegisterExtension
  final NftNamespace nft = new NftNamespace("sidetables");

  @Test
  void theDrainTableListsAsItAlwaysHas() {
    new DrainNftables(nft.client()).write(prefixes("10.128.2.5", "10.128.3.5", "fd10:128:2::5"), 0x3f000000L,
        0x3e000000L, Duration.ofSeconds(10));
    assertThat(listing(DrainNftables.TABLE)).isEqualTo(expected("drain-table.nft"));
  }

  @Test
  void theNoHostTableListsAsItAlwaysHas() {
    new NoHostNftables(nft.client()).sync(
        List.of(new NoHostNftables.Hold("shop/web", IpPrefix.parse("10.128.2.5")),
            new NoHostNftables.Hold("shop/web", IpPrefix.parse("fd10:128:2::5")),
            new NoHostNftables.Hold("bank/api", IpPrefix.parse("10.128.2.7"))),
        prefixes("10.128.0.0/16", "10.129.0.0/16", "172.30.0.0/16", "192.168.50.11", "fd10:128::/48"),
        prefixes("5.5.5.5", "2001:db8::5"), prefixes("10.128.1.5", "fd10:128:1::5"), true, false);
    assertThat(listing(NoHostNftables.TABLE)).isEqualTo(expected("nohost-table.nft"));
  }

  @Test
  void theGuardTableWithoutSteeringListsAsItAlwaysHas() {
    new GuardNftables(nft.client()).sync(Optional.of(new GuardNftables.Shape(OptionalInt.empty(), List.of(),
        List.of(), prefixes("10.128.0.0/16", "192.168.50.11", "fd10:128::/48"))),
        new GuardNftables.Sources(prefixes("10.128.2.5"), prefixes("10.128.1.5", "fd10:128:1::5"), List.of(),
            prefixes("10.128.1.7")), false);
    assertThat(listing(GuardNftables.TABLE)).isEqualTo(expected("guard-table-without-steering.nft"));
  }

  @Test
  void theNoHostGuardsSourcesComeAndGoByElementKeepingTheTable() {
    NoHostNftables noHost = new NoHostNftables(nft.client());
    List<NoHostNftables.Hold> holds = List.of(new NoHostNftables.Hold("shop/web", IpPrefix.parse("10.128.2.5")));
    List<IpPrefix> inCluster = prefixes("10.128.0.0/16");
    noHost.sync(holds, inCluster, prefixes("5.5.5.5"), prefixes("10.128.1.5"), true, false);
    long handle = tableHandle();

    noHost.sync(holds, inCluster, prefixes("6.6.6.6"), prefixes("10.128.1.5", "fd10:128:1::5"), true, true);
    assertThat(tableHandle()).as("the same table: changed by element, not rewritten").isEqualTo(handle);
    assertThat(noHost.updateElements(prefixes("7.7.7.7"), prefixes("6.6.6.6"), List.of(), prefixes("10.128.1.5")))
        .isTrue();
    assertThat(tableHandle()).isEqualTo(handle);
    String listed = listing(NoHostNftables.TABLE);
    assertThat(listed).contains("elements = { 7.7.7.7 }", "elements = { fd10:128:1::5 }")
        .doesNotContain("5.5.5.5", "6.6.6.6", "10.128.1.5 ");

    noHost.sync(List.of(), inCluster, List.of(), List.of(), true, false);
    assertThat(tableHandle()).as("a hold gone: the table is written whole").isNotEqualTo(handle);
  }

  private long tableHandle() {
    return nft.ns().json("nft", "-j", "list", "table", "inet", NoHostNftables.TABLE).get("nftables").get(1)
        .get("table").get("handle").asLong();
  }

  private String listing(String table) {
    return nft.ns().exec("nft", "list", "table", "inet", table).replaceAll(" expires [0-9a-z]+", "");
  }

  /** A listing as the table classes' nft scripts wrote it, for the same inputs (element expiry left out). */
  private static String expected(String resource) {
    try (InputStream in = SideTablesListingNetnsTest.class.getResourceAsStream(resource)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static List<IpPrefix> prefixes(String... p) {
    return Arrays.stream(p).map(IpPrefix::parse).toList();
  }
}
