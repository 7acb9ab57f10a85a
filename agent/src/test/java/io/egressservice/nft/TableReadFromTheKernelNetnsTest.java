package io.egressservice.nft;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.egressservice.nft.EgressListing.Observed;
import io.egressservice.nft.MarkNftables.MarkState;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The owned table read as the agent reads it (definitions from a listing without elements, elements streamed from the
 * kernel) says the same as a full {@code nft -j list table}, for every kind of object and element it holds, and reads
 * nothing of other tables.
 */
class TableReadFromTheKernelNetnsTest {
  @RegisterExtension
  final NftNamespace kernel = new NftNamespace("tread");

  static final String TABLE_SCRIPT = """
      table inet egress_service_agent {
        map snat_v4 {
          type ipv4_addr : ipv4_addr
          elements = { 10.244.0.5 comment "shop/web" : 192.0.2.10, 10.244.0.6 : 192.0.2.11 }
        }
        map snat_v6 {
          type ipv6_addr : ipv6_addr
          elements = { fd00::5 comment "shop/web" : 2001:db8::10 }
        }
        set in_cluster_v4 {
          type ipv4_addr
          flags interval
          elements = { 10.96.0.0/12, 10.244.0.0/16, 172.16.0.5, 192.168.1.1-192.168.1.9, 255.255.255.0/24 }
        }
        set in_cluster_v6 {
          type ipv6_addr
          flags interval
          elements = { fd00::/64, fd01::1, ffff::/16 }
        }
        chain mark_t100 {
          meta mark set meta mark & 0xc0ffffff | 0x01000000
        }
        chain mark_t101 {
          meta mark set meta mark & 0xc0ffffff | 0x02000000
        }
        chain elsewhere {
        }
        map mark_v4 {
          type ipv4_addr : verdict
          elements = { 10.244.0.5 comment "shop/web" : jump mark_t100, 10.244.0.8 : jump mark_t101,
                       10.244.0.9 : jump elsewhere, 10.244.0.10 : accept }
        }
        map mark_v6 {
          type ipv6_addr : verdict
          elements = { fd00::5 comment "shop/web" : jump mark_t100 }
        }
        set mark_reply_ifaces {
          type ifname
          elements = { "up1", "eth0.100" }
        }
        chain mark_prerouting {
          type filter hook prerouting priority mangle; policy accept;
          ip saddr vmap @mark_v4
          ip6 saddr vmap @mark_v6
        }
        chain egress_snat {
          type nat hook postrouting priority srcnat + 10; policy accept;
        }
      }
      table ip egress_service_agent {
        map snat_v4 {
          type ipv4_addr : ipv4_addr
          elements = { 10.244.9.9 : 192.0.2.99 }
        }
      }
      table inet other {
        map mark_v4 {
          type ipv4_addr : verdict
          elements = { 10.244.9.9 : accept }
        }
        chain mark_t102 {
        }
      }
      """;

  @Test
  void theDefinitionsAndTheKernelsElementsReadTheSameAsAFullListing() {
    kernel.client().runScript(TABLE_SCRIPT);
    Optional<JsonNode> full = kernel.client().listTableIfPresent(EgressNftables.FAMILY, EgressNftables.TABLE);
    Optional<JsonNode> definitions = kernel.client().tableDefinitionsIfPresent(EgressNftables.FAMILY, EgressNftables.TABLE);

    assertThat(definitions).isPresent();
    assertThat(definitions.get().toString()).as("no elements, nothing of other tables")
        .doesNotContain("\"elem\"").doesNotContain("10.244.").doesNotContain("\"other\"").doesNotContain("\"family\":\"ip\"");

    Observed listed = EgressListing.parse(full);
    Observed read = EgressListing.parse(definitions, EgressListing.fromKernel(kernel.client()));
    assertThat(read).isEqualTo(listed);
    assertThat(read.snat()).hasSize(3);
    assertThat(read.inCluster()).hasSize(8);

    MarkState marksListed = MarkListing.parse(full);
    MarkState marksRead = MarkListing.parse(definitions, MarkListing.fromKernel(kernel.client()));
    assertThat(marksRead).isEqualTo(marksListed);
    assertThat(marksRead.elements()).hasSize(3);
    assertThat(marksRead.replyIfaces()).contains(java.util.Set.of("up1", "eth0.100"));
    assertThat(marksRead.networkChains()).containsOnlyKeys(100L, 101L);
  }

  @Test
  void anAbsentTableReadsAsAbsentAndAnEmptyOneAsEmpty() {
    assertThat(kernel.client().tableDefinitionsIfPresent(EgressNftables.FAMILY, EgressNftables.TABLE)).isEmpty();
    assertThat(EgressListing.parse(Optional.empty(), EgressListing.fromKernel(kernel.client())).tablePresent()).isFalse();

    kernel.client().runScript("table inet egress_service_agent {\n}\ntable inet other {\n set s {\n  type ifname\n }\n}\n");
    Optional<JsonNode> definitions = kernel.client().tableDefinitionsIfPresent(EgressNftables.FAMILY, EgressNftables.TABLE);
    assertThat(EgressListing.parse(definitions, EgressListing.fromKernel(kernel.client())))
        .isEqualTo(EgressListing.parse(kernel.client().listTableIfPresent(EgressNftables.FAMILY, EgressNftables.TABLE)));
    assertThat(MarkListing.parse(definitions, MarkListing.fromKernel(kernel.client())).anyPresent()).isFalse();
  }
}
