package io.egressservice.netlink;

import static io.egressservice.netlink.NetlinkConstants.*;

import java.nio.ByteBuffer;
import java.util.Optional;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.stream.Collector;

/**
 * The elements of one nftables set or map, streamed over NETLINK_NETFILTER: a dump of {@code NFT_MSG_GETSETELEM}
 * for the named set of the named table, which the kernel answers with {@code NFT_MSG_NEWSETELEM} messages of a few
 * hundred elements each. Each element is decoded while its datagram is in the one 64 KiB receive buffer and handed
 * to the caller's {@link Collector}; nothing here grows with the set.
 *
 * <p>Why not libnftables' {@code list set}/{@code list table}: nft 1.0.6 builds the whole listing as one JSON tree
 * in native memory and keeps the memory it used (55,000 elements: 144 MiB of RSS and 1 s per listing). The table's
 * structure is cheap to list without its elements ({@code nft -t}); the elements come from here.
 *
 * <p>Wire format ({@code <linux/netfilter/nf_tables.h>}): a request with a {@code struct nfgenmsg} (family,
 * NFNETLINK_V0, res_id 0), NLM_F_DUMP, and attributes NFTA_SET_ELEM_LIST_TABLE and NFTA_SET_ELEM_LIST_SET (strings;
 * the kernel answers ENOENT when either does not exist). Each answer carries NFTA_SET_ELEM_LIST_ELEMENTS, a list
 * of NFTA_LIST_ELEM, each with NFTA_SET_ELEM_KEY (none for the catch-all element {@code *}) and, when present,
 * NFTA_SET_ELEM_KEY_END (nested NFTA_DATA_VALUE bytes), NFTA_SET_ELEM_DATA (nested NFTA_DATA_VALUE, or
 * NFTA_DATA_VERDICT with a big-endian NFTA_VERDICT_CODE and NFTA_VERDICT_CHAIN), NFTA_SET_ELEM_FLAGS (big-endian
 * u32) and NFTA_SET_ELEM_USERDATA (libnftnl's TLVs: the comment is type 0, NUL-terminated). Timeouts, expirations
 * and per-element expressions are not read. CLI equivalent: {@code nft list set FAMILY TABLE SET} ({@code list
 * map} for a map); {@code nft --debug=netlink} prints the raw elements this reads.
 *
 * <p>A dump during which a commit changed the ruleset is started again with a fresh container from the collector,
 * so a result never mixes two rulesets (the kernel resumes a set's dump by counting elements, so a commit between
 * two datagrams could skip or repeat some). The kernel does not mark set element dumps NLM_F_DUMP_INTR; the change
 * shows in the generation each answer carries (nfgenmsg res_id). After {@value NftSocket#DUMP_ATTEMPTS} interrupted
 * dumps it fails with EINTR.
 *
 * <p>The socket is created on the namespace's {@link NetnsThread}; {@link #collect} may be called from any thread,
 * and runs the collector on the namespace's thread. Needs CAP_NET_ADMIN, like every nfnetlink request.
 */
public final class NftSetElements implements AutoCloseable {
  static final int NFT_MSG_NEWSETELEM = 12;
  static final int NFT_MSG_GETSETELEM = 13;
  /** {@code enum nft_set_elem_list_attributes}. */
  static final int NFTA_SET_ELEM_LIST_TABLE = 1;
  static final int NFTA_SET_ELEM_LIST_SET = 2;
  static final int NFTA_SET_ELEM_LIST_ELEMENTS = 3;
  /** {@code enum nft_list_attributes}. */
  static final int NFTA_LIST_ELEM = 1;
  /** {@code enum nft_set_elem_attributes}. */
  static final int NFTA_SET_ELEM_KEY = 1;
  static final int NFTA_SET_ELEM_DATA = 2;
  static final int NFTA_SET_ELEM_FLAGS = 3;
  static final int NFTA_SET_ELEM_USERDATA = 6;
  static final int NFTA_SET_ELEM_KEY_END = 10;
  /** {@code enum nft_data_attributes}. */
  static final int NFTA_DATA_VALUE = 1;
  static final int NFTA_DATA_VERDICT = 2;
  /** {@code enum nft_verdict_attributes}. */
  static final int NFTA_VERDICT_CODE = 1;
  static final int NFTA_VERDICT_CHAIN = 2;

  private final NetnsThread thread;
  private final NftSocket socket;
  private boolean closed;

  NftSetElements(NetnsThread thread, NftSocket socket) {
    this.thread = thread;
    this.socket = socket;
  }

  /**
   * Opens a NETLINK_NETFILTER socket in the namespace of {@code thread} (which stays the caller's).
   *
   * @throws NetlinkException when the socket cannot be created
   */
  public static NftSetElements open(NetnsThread thread) {
    return new NftSetElements(thread, NftSocket.open(thread));
  }

  /**
   * The elements of set or map {@code set} of table {@code table} of {@code family} ("inet", "ip", "ip6", ...),
   * in the kernel's order, reduced by {@code collector} as they arrive: e.g. {@code Collectors.counting()}, {@code
   * Collectors.toMap(...)}, {@link NftIntervals#collector()}. The collector's container is made afresh for each
   * attempt of the dump, so what it receives is one consistent ruleset's elements. It runs on the namespace's
   * thread: it must not call back into this reader or anything else that runs there.
   *
   * @return the collector's result, or empty when the table or the set does not exist
   * @throws NetlinkException when the kernel refuses (EPERM without CAP_NET_ADMIN, no nf_tables, ...), does not
   *     answer within the receive timeout, or the ruleset keeps changing (EINTR)
   */
  public <A, R> Optional<R> collect(String family, String table, String set, Collector<SetElement, A, R> collector) {
    int fam = NftSocket.family(family);
    return thread.call(() -> {
      synchronized (this) {
        if (closed) {
          throw new IllegalStateException("nftables set element reader of " + thread.describe() + " is closed");
        }
        String op = "dump the elements of nftables set " + family + " " + table + " " + set + " (NFT_MSG_GETSETELEM)";
        BiConsumer<A, SetElement> accumulator = collector.accumulator();
        return socket.dump(op, (w, seq) -> encodeDump(w, seq, fam, table, set), collector.supplier(),
            (container, m) -> {
              if (m.type() == NftSocket.type(NFT_MSG_NEWSETELEM)) {
                decodeElements(m.payload(), e -> accumulator.accept(container, e));
              }
            }).map(collector.finisher());
      }
    });
  }

  static void encodeDump(NetlinkMessageWriter w, int seq, int family, String table, String set) {
    w.begin(NftSocket.type(NFT_MSG_GETSETELEM), NLM_F_REQUEST | NLM_F_DUMP, seq);
    w.u8(family).u8(NftSocket.NFNETLINK_V0).u16(0);
    w.attrString(NFTA_SET_ELEM_LIST_TABLE, table);
    w.attrString(NFTA_SET_ELEM_LIST_SET, set);
    w.end();
  }

  /** Hands each element of one NFT_MSG_NEWSETELEM payload ({@code struct nfgenmsg} + attributes) to {@code each}. */
  static void decodeElements(ByteBuffer payload, Consumer<SetElement> each) {
    NetlinkAttributes a = NetlinkAttributes.parse(payload, NftSocket.NFGENMSG_LEN, payload.limit());
    a.forEachNested(NFTA_SET_ELEM_LIST_ELEMENTS, NFTA_LIST_ELEM, e -> each.accept(decodeElement(e)));
  }

  private static SetElement decodeElement(NetlinkAttributes e) {
    int flags = bigEndianInt(e, NFTA_SET_ELEM_FLAGS).orElse(0);
    // The catch-all element (*) has no key.
    byte[] key = value(e, NFTA_SET_ELEM_KEY).or(() -> Optional.of(new byte[0]).filter(k -> (flags
        & SetElement.CATCH_ALL) != 0)).orElseThrow(() -> new IllegalArgumentException(
            "set element without NFTA_SET_ELEM_KEY that is not the catch-all element"));
    Optional<byte[]> data = Optional.empty();
    Optional<SetElement.Verdict> verdict = Optional.empty();
    Optional<NetlinkAttributes> d = e.nested(NFTA_SET_ELEM_DATA);
    if (d.isPresent()) {
      data = d.get().bytes(NFTA_DATA_VALUE);
      verdict = d.get().nested(NFTA_DATA_VERDICT).map(v -> new SetElement.Verdict(
          bigEndianInt(v, NFTA_VERDICT_CODE)
              .orElseThrow(() -> new IllegalArgumentException("verdict without NFTA_VERDICT_CODE")),
          v.string(NFTA_VERDICT_CHAIN)));
    }
    Optional<String> comment = e.bytes(NFTA_SET_ELEM_USERDATA).flatMap(NftSocket::comment);
    return new SetElement(key, value(e, NFTA_SET_ELEM_KEY_END), data, verdict, flags, comment);
  }

  /** The NFTA_DATA_VALUE bytes nested in attribute {@code type}. */
  private static Optional<byte[]> value(NetlinkAttributes e, int type) {
    return e.nested(type).flatMap(v -> v.bytes(NFTA_DATA_VALUE));
  }

  private static Optional<Integer> bigEndianInt(NetlinkAttributes a, int type) {
    return a.bytes(type).map(b -> {
      if (b.length != 4) {
        throw new IllegalArgumentException("attribute " + type + " has " + b.length + " bytes, expected 4");
      }
      return ByteBuffer.wrap(b).getInt();
    });
  }

  @Override
  public void close() {
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
    }
    socket.close();
  }
}
