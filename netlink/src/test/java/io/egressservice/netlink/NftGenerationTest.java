package io.egressservice.netlink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.egressservice.testing.Netns;
import io.egressservice.testing.Privileges;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Optional;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** NFT_MSG_GETGEN: the wire format without root, then against the kernel with nft as the actor. */
class NftGenerationTest {

  @Test
  void requestIsGetgenWithAnUnspecNfgenmsg() {
    assumeTrue(ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN, "test vectors are little-endian");
    NetlinkMessageWriter w = new NetlinkMessageWriter(ByteBuffer.allocate(64));
    NftGeneration.encodeRequest(w, 0x01020304);
    assertThat(Hex.of(w.toByteArray())).isEqualTo(Hex.of(Hex.bytes("""
        14 00 00 00 | 10 0a | 05 00 | 04 03 02 01 | 00 00 00 00   # len 20, (NFNL_SUBSYS_NFTABLES 10 << 8) | NFT_MSG_GETGEN 16, REQUEST|ACK, seq, pid
        00 00 00 00                                               # nfgenmsg: AF_UNSPEC, NFNETLINK_V0, res_id 0
        """)));
  }

  @Test
  void newgenIdIsBigEndian() {
    ByteBuffer payload = ByteBuffer.wrap(Hex.bytes("""
        00 00 00 2a                 # nfgenmsg: AF_UNSPEC, V0, res_id (low 16 bits of the id, big-endian)
        08 00 01 00 | 80 00 00 2a   # NFTA_GEN_ID = 0x8000002a, network order
        """)).order(ByteOrder.nativeOrder());
    assertThat(NftGeneration.decodeGeneration(payload)).isEqualTo(0x8000002aL);
  }

  @Nested
  class Kernel {
    @Test
    void generationMovesWithEveryNftCommitAndOnlyThen() {
      Privileges.assumeNetAdmin();
      try (Netns ns = Netns.create("gen");
          NetnsThread thread = NetnsThread.enter(Optional.of(ns.name()));
          NftGeneration gen = NftGeneration.open(thread)) {
        long g0 = gen.read();
        assertThat(gen.read()).as("reading twice changes nothing").isEqualTo(g0);

        ns.exec("nft", "add", "table", "inet", "t");
        long g1 = gen.read();
        assertThat(g1).isNotEqualTo(g0);

        ns.exec("nft", "list", "ruleset");
        ns.exec("nft", "-j", "list", "table", "inet", "t");
        assertThat(gen.read()).as("listing is not a commit").isEqualTo(g1);

        ns.exec("nft", "add", "set", "inet", "t", "s", "{ type ipv4_addr; }");
        long g2 = gen.read();
        ns.exec("nft", "add", "element", "inet", "t", "s", "{ 192.0.2.1 }");
        long g3 = gen.read();
        ns.exec("nft", "delete", "element", "inet", "t", "s", "{ 192.0.2.1 }");
        long g4 = gen.read();
        assertThat(g2).isNotEqualTo(g1);
        assertThat(g3).isNotEqualTo(g2);
        assertThat(g4).isNotEqualTo(g3);

        // A refused transaction (absent element) is aborted, not committed.
        assertThat(ns.tryExec("nft", "delete", "element", "inet", "t", "s", "{ 192.0.2.9 }").exitCode()).isNotZero();
        assertThat(gen.read()).isEqualTo(g4);
      }
    }

    @Test
    void eachNamespaceHasItsOwnGeneration() {
      Privileges.assumeNetAdmin();
      try (Netns a = Netns.create("gen");
          Netns b = Netns.create("gen");
          NetnsThread ta = NetnsThread.enter(Optional.of(a.name()));
          NetnsThread tb = NetnsThread.enter(Optional.of(b.name()));
          NftGeneration ga = NftGeneration.open(ta);
          NftGeneration gb = NftGeneration.open(tb)) {
        long a0 = ga.read();
        long b0 = gb.read();
        b.exec("nft", "add", "table", "inet", "t");
        assertThat(ga.read()).isEqualTo(a0);
        assertThat(gb.read()).isNotEqualTo(b0);
      }
    }
  }
}
