package io.egressservice.netlink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Optional;
import java.util.function.IntFunction;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * NFT_MSG_GETSETELEM without root: the request and the decoding byte for byte, and the dump's handling of
 * interruption, errors and a failing collector through recorded datagrams. The kernel, with nft as the oracle, is
 * in {@link NftSetElementsKernelTest}.
 */
class NftSetElementsTest {
  private final NetnsThread thread = NetnsThread.enter(Optional.empty());

  @AfterEach
  void closeThread() {
    thread.close();
  }

  @Test
  void setElementDumpIsGetsetelemNamingTableAndSet() {
    assumeTrue(ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN, "test vectors are little-endian");
    NetlinkMessageWriter w = new NetlinkMessageWriter(ByteBuffer.allocate(64));
    NftSetElements.encodeDump(w, 7, 1, "t", "s1");
    assertThat(Hex.of(w.toByteArray())).isEqualTo(Hex.of(Hex.bytes("""
        24 00 00 00 | 0d 0a | 01 03 | 07 00 00 00 | 00 00 00 00   # len 36, NFTABLES << 8 | NFT_MSG_GETSETELEM 13, REQUEST|DUMP, seq
        01 00 00 00                                               # nfgenmsg: NFPROTO_INET, NFNETLINK_V0, res_id 0
        06 00 01 00 | 74 00 00 00                                 # NFTA_SET_ELEM_LIST_TABLE "t"
        07 00 02 00 | 73 31 00 00                                 # NFTA_SET_ELEM_LIST_SET "s1"
        """)));
  }

  @Test
  void elementsAreDecodedWithKeyVerdictDataFlagsAndComment() {
    byte[] payload = Hex.bytes("""
        01 00 00 00                                               # nfgenmsg
        06 00 01 00 | 74 00 00 00                                 # NFTA_SET_ELEM_LIST_TABLE "t"
        06 00 02 00 | 6d 00 00 00                                 # NFTA_SET_ELEM_LIST_SET "m"
        74 00 03 80                                               # NFTA_SET_ELEM_LIST_ELEMENTS, nested
        38 00 01 80                                               #  NFTA_LIST_ELEM
        0c 00 01 80 | 08 00 01 00 | 0a 00 00 01                   #   KEY { VALUE 10.0.0.1 }
        1c 00 02 80 | 18 00 02 80                                 #   DATA { VERDICT {
        08 00 01 00 | ff ff ff fd                                 #     CODE NFT_JUMP (-3), network order
        0b 00 02 00 | 73 76 63 2d 31 00 00 00                     #     CHAIN "svc-1" } }
        0c 00 06 00 | 00 06 73 2f 61 2d 62 00                     #   USERDATA: comment (0), 6 bytes "s/a-b\\0"
        38 00 01 80                                               #  NFTA_LIST_ELEM
        0c 00 01 80 | 08 00 01 00 | 0a 00 00 02                   #   KEY { VALUE 10.0.0.2 }
        0c 00 02 80 | 08 00 01 00 | c0 00 02 01                   #   DATA { VALUE 192.0.2.1 }
        08 00 03 00 | 00 00 00 01                                 #   FLAGS INTERVAL_END, network order
        14 00 0a 80 | 10 00 01 00 | 0a 00 00 09 00 16 00 00 ff ff ff ff  # KEY_END { VALUE, 12 bytes }
        """);
    List<SetElement> out = new ArrayList<>();
    NftSetElements.decodeElements(ByteBuffer.wrap(payload).order(ByteOrder.nativeOrder()), out::add);
    assertThat(out).containsExactly(
        new SetElement(new byte[] {10, 0, 0, 1}, Optional.empty(), Optional.empty(),
            Optional.of(new SetElement.Verdict(SetElement.Verdict.JUMP, Optional.of("svc-1"))), 0, Optional.of("s/a-b")),
        new SetElement(new byte[] {10, 0, 0, 2},
            Optional.of(new byte[] {10, 0, 0, 9, 0, 0x16, 0, 0, -1, -1, -1, -1}),
            Optional.of(new byte[] {(byte) 192, 0, 2, 1}), Optional.empty(), SetElement.INTERVAL_END, Optional.empty()));
    assertThat(out.get(0).verdict().orElseThrow()).hasToString("jump svc-1");
    assertThat(out.get(1).intervalEnd()).isTrue();
  }

  @Test
  void anElementsArraysCannotBeChangedFromOutside() {
    byte[] key = {10, 0, 0, 1};
    SetElement e = SetElement.of(key);
    key[3] = 9;
    e.key()[3] = 8;
    assertThat(e.key()).containsExactly(10, 0, 0, 1);
    assertThat(e).isEqualTo(SetElement.of(new byte[] {10, 0, 0, 1})).hasSameHashCodeAs(SetElement.of(
        new byte[] {10, 0, 0, 1})).hasToString("SetElement[0a000001]");
  }

  @Test
  void anInterruptedDumpIsStartedAgainAndOnlyTheCompleteAttemptIsCollected() {
    Recorded kernel = new Recorded();
    kernel.answer(seq -> concat(elements(seq, NLM_MULTI, 1, 2), elements(seq, NLM_MULTI | DUMP_INTR, 3)));
    kernel.answer(seq -> done(seq, NLM_MULTI | DUMP_INTR));
    kernel.answer(seq -> elements(seq, NLM_MULTI, 1, 2, 3, 4));
    kernel.answer(seq -> done(seq, NLM_MULTI));
    try (NftSetElements reader = new NftSetElements(thread, new NftSocket(kernel, "recorded"))) {
      assertThat(reader.collect("inet", "t", "s", Collectors.mapping(e -> (int) e.key()[3], Collectors.toList())))
          .contains(List.of(1, 2, 3, 4));
    }
    assertThat(kernel.requests).isEqualTo(2);
  }

  @Test
  void aDumpWhoseAnswersCarryTwoGenerationsIsStartedAgain() {
    // What the kernel does for set elements: no NLM_F_DUMP_INTR, but each answer carries the generation it was
    // filled at; 0x1ff then 0x200 (the byte order matters).
    Recorded kernel = new Recorded();
    kernel.answer(seq -> elementsAt(0x1ff, seq, NLM_MULTI, 1, 2));
    kernel.answer(seq -> elementsAt(0x200, seq, NLM_MULTI, 3));
    kernel.answer(seq -> done(seq, NLM_MULTI));
    kernel.answer(seq -> elementsAt(0x200, seq, NLM_MULTI, 1, 2, 3));
    kernel.answer(seq -> elementsAt(0x200, seq, NLM_MULTI, 4));
    kernel.answer(seq -> done(seq, NLM_MULTI));
    try (NftSetElements reader = new NftSetElements(thread, new NftSocket(kernel, "recorded"))) {
      assertThat(reader.collect("inet", "t", "s", Collectors.mapping(e -> (int) e.key()[3], Collectors.toList())))
          .contains(List.of(1, 2, 3, 4));
    }
    assertThat(kernel.requests).isEqualTo(2);
  }

  @Test
  void aDumpInterruptedAtEveryAttemptFailsWithEintr() {
    Recorded kernel = new Recorded();
    for (int i = 0; i < NftSocket.DUMP_ATTEMPTS; i++) {
      kernel.answer(seq -> elements(seq, NLM_MULTI | DUMP_INTR, 1));
      kernel.answer(seq -> done(seq, NLM_MULTI | DUMP_INTR));
    }
    try (NftSetElements reader = new NftSetElements(thread, new NftSocket(kernel, "recorded"))) {
      assertThatThrownBy(() -> reader.collect("inet", "t", "s", Collectors.counting()))
          .isInstanceOfSatisfying(NetlinkException.class, e -> assertThat(e.errno()).isEqualTo(NetlinkSocket.EINTR))
          .hasMessageContaining("kept changing");
    }
  }

  @Test
  void noSuchTableOrSetIsEmptyAndOtherErrorsAreThrownWithTheirName() {
    Recorded kernel = new Recorded();
    kernel.answer(seq -> error(seq, NetlinkException.ENOENT));
    kernel.answer(seq -> error(seq, NetlinkException.EPERM));
    kernel.answer(seq -> error(seq, 12)); // ENOMEM
    try (NftSetElements reader = new NftSetElements(thread, new NftSocket(kernel, "recorded"))) {
      assertThat(reader.collect("inet", "t", "s", Collectors.counting())).isEmpty();
      assertThatThrownBy(() -> reader.collect("inet", "t", "s", Collectors.counting()))
          .isInstanceOf(NetlinkException.PermissionDenied.class).hasMessageContaining("CAP_NET_ADMIN");
      assertThatThrownBy(() -> reader.collect("inet", "t", "s", Collectors.counting()))
          .isInstanceOfSatisfying(NetlinkException.class, e -> assertThat(e.errno()).isEqualTo(12))
          .hasMessageContaining("Cannot allocate memory").hasMessageContaining("NFT_MSG_GETSETELEM");
    }
  }

  @Test
  void aCollectorThatFailsLeavesNoDumpBehindForTheNextRead() {
    Recorded kernel = new Recorded();
    kernel.answer(seq -> elements(seq, NLM_MULTI, 1));
    kernel.answer(seq -> elements(seq, NLM_MULTI, 2));
    kernel.answer(seq -> done(seq, NLM_MULTI));
    kernel.answer(seq -> elements(seq, NLM_MULTI, 7));
    kernel.answer(seq -> done(seq, NLM_MULTI));
    try (NftSetElements reader = new NftSetElements(thread, new NftSocket(kernel, "recorded"))) {
      assertThatThrownBy(() -> reader.collect("inet", "t", "s", Collectors.reducing(0, e -> {
        throw new IllegalStateException("the caller's own failure");
      }, Integer::sum)))
          .isInstanceOf(IllegalStateException.class).hasMessage("the caller's own failure");
      assertThat(kernel.pending()).as("the rest of the failed dump was read").isEqualTo(2);
      assertThat(reader.collect("inet", "t", "s", Collectors.mapping(e -> (int) e.key()[3], Collectors.toList())))
          .contains(List.of(7));
    }
  }

  @Test
  void noAnswerWithinTheTimeoutFailsInsteadOfWaitingForever() {
    Recorded kernel = new Recorded(); // answers nothing: receive reports its timeout
    try (NftSetElements reader = new NftSetElements(thread, new NftSocket(kernel, "recorded"))) {
      assertThatThrownBy(() -> reader.collect("inet", "t", "s", Collectors.counting()))
          .isInstanceOf(NetlinkException.class).hasMessageContaining("no answer within");
    }
  }

  private static final int NLM_MULTI = NetlinkConstants.NLM_F_MULTI;
  private static final int DUMP_INTR = NetlinkConstants.NLM_F_DUMP_INTR;

  /** One NFT_MSG_NEWSETELEM with keys 10.0.0.k, filled at generation 7. */
  private static byte[] elements(int seq, int flags, int... lastBytes) {
    return elementsAt(7, seq, flags, lastBytes);
  }

  /** One NFT_MSG_NEWSETELEM with keys 10.0.0.k, filled at {@code generation} (nfgenmsg res_id, big-endian). */
  private static byte[] elementsAt(int generation, int seq, int flags, int... lastBytes) {
    NetlinkMessageWriter w = new NetlinkMessageWriter(ByteBuffer.allocate(4096));
    w.begin(NftSocket.type(NftSetElements.NFT_MSG_NEWSETELEM), flags, seq);
    w.u8(1).u8(0).u8(generation >> 8).u8(generation);
    w.attrString(NftSetElements.NFTA_SET_ELEM_LIST_TABLE, "t");
    w.attrString(NftSetElements.NFTA_SET_ELEM_LIST_SET, "s");
    int list = w.beginNested(NftSetElements.NFTA_SET_ELEM_LIST_ELEMENTS);
    for (int k : lastBytes) {
      int elem = w.beginNested(NftSetElements.NFTA_LIST_ELEM);
      int key = w.beginNested(NftSetElements.NFTA_SET_ELEM_KEY);
      w.attrBytes(NftSetElements.NFTA_DATA_VALUE, new byte[] {10, 0, 0, (byte) k});
      w.endNested(key);
      w.endNested(elem);
    }
    w.endNested(list);
    w.end();
    return w.toByteArray();
  }

  private static byte[] done(int seq, int flags) {
    NetlinkMessageWriter w = new NetlinkMessageWriter(ByteBuffer.allocate(64));
    w.begin(NetlinkConstants.NLMSG_DONE, flags, seq).u32(0).end();
    return w.toByteArray();
  }

  private static byte[] error(int seq, int errno) {
    NetlinkMessageWriter w = new NetlinkMessageWriter(ByteBuffer.allocate(64));
    w.begin(NetlinkConstants.NLMSG_ERROR, 0, seq).u32(-errno);
    w.u32(36).u16(NftSocket.type(NftSetElements.NFT_MSG_GETSETELEM)).u16(0x301).u32(seq).u32(0); // echoed header
    w.end();
    return w.toByteArray();
  }

  private static byte[] concat(byte[] a, byte[] b) {
    byte[] out = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  /** A kernel that answers with recorded datagrams, each made for the sequence number of the last request. */
  private static final class Recorded implements NftSocket.Datagrams {
    private final Deque<IntFunction<byte[]>> answers = new ArrayDeque<>();
    private int seq;
    int requests;

    void answer(IntFunction<byte[]> datagram) {
      answers.add(datagram);
    }

    int pending() {
      return answers.size();
    }

    @Override
    public void send(ByteBuffer direct, int length) {
      seq = direct.duplicate().order(ByteOrder.nativeOrder()).getInt(8);
      requests++;
    }

    @Override
    public int receive(ByteBuffer direct) {
      IntFunction<byte[]> next = answers.poll();
      if (next == null) {
        return -1;
      }
      byte[] d = next.apply(seq);
      direct.put(0, d);
      return d.length;
    }

    @Override
    public void close() {}
  }
}
