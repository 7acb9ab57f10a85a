package io.egressservice.kernel.linux;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.jna.Pointer;
import io.egressservice.netlink.NetlinkException;
import io.egressservice.netlink.NetnsThread;
import io.egressservice.netlink.NftCounters;
import io.egressservice.netlink.NftSetElements;
import io.egressservice.netlink.SetElement;
import io.egressservice.kernel.NftException;
import io.egressservice.kernel.Nftables;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collector;

/**
 * A libnftables context living on one {@link NetnsThread}: every call runs there, so all commands
 * act in that thread's network namespace. Input and output are libnftables-json(5) documents
 * ({@code {"nftables":[...]}}).
 *
 * <p>One {@link #run} is one {@code nft_run_cmd_from_buffer} call, which libnftables sends to the
 * kernel as one batch: either every command takes effect or none does (CLI equivalent: {@code nft -j -f
 * FILE}).
 */
public final class NftClient implements Nftables {
  public static final ObjectMapper JSON = new ObjectMapper();

  private final NetnsThread thread;
  private final Libnftables lib;
  private Pointer ctx;
  /** Opened on first use: counters and table presence read over nfnetlink, without libnftables' cache. */
  private NftCounters counters;
  /** Opened on first use: the elements of the owned table's sets, streamed over nfnetlink. */
  private NftSetElements elements;
  /** Touched only on {@link #thread}. */
  private final NativeHeapTrim trim = new NativeHeapTrim();

  private NftClient(NetnsThread thread, Libnftables lib, Pointer ctx) {
    this.thread = thread;
    this.lib = lib;
    this.ctx = ctx;
  }

  /** Creates a context on {@code thread} (so in its namespace) with buffered JSON output and errors. */
  public static NftClient open(NetnsThread thread) {
    return thread.call(
        () -> {
          Libnftables lib = Libnftables.get();
          Pointer ctx = lib.nft_ctx_new(Libnftables.NFT_CTX_DEFAULT);
          if (ctx == null) {
            throw new NftException("nft_ctx_new failed in " + thread.describe());
          }
          lib.nft_ctx_output_set_flags(ctx, lib.nft_ctx_output_get_flags(ctx) | Libnftables.NFT_CTX_OUTPUT_JSON);
          if (lib.nft_ctx_buffer_output(ctx) != 0 || lib.nft_ctx_buffer_error(ctx) != 0) {
            lib.nft_ctx_free(ctx);
            throw new NftException("cannot buffer libnftables output in " + thread.describe());
          }
          return new NftClient(thread, lib, ctx);
        });
  }

  /** The namespace this client acts in, for messages. */
  @Override
  public String describe() {
    return thread.describe();
  }

  /**
   * Runs a libnftables-json document ({@code {"nftables":[{"add":{...}}, ...]}}) as one atomic
   * transaction and returns its parsed output ({@code {"nftables":[]}} when there is none, as for
   * add/delete commands).
   *
   * @throws NftException with nft's error text and a summary of the commands; nothing was applied
   */
  @Override
  public JsonNode run(JsonNode nftablesCommands) {
    String input;
    try {
      input = JSON.writeValueAsString(nftablesCommands);
    } catch (JsonProcessingException e) {
      throw new NftException("cannot serialize nft commands: " + e.getMessage(), e);
    }
    Outcome result = execute(input, false, false);
    if (result.rc() != 0) {
      throw failure(result.err(), summarize(nftablesCommands), thread.describe());
    }
    String out = result.out().trim();
    if (out.isEmpty()) {
      ObjectNode empty = JSON.createObjectNode();
      empty.putArray("nftables");
      return empty;
    }
    try {
      return JSON.readTree(out);
    } catch (JsonProcessingException e) {
      throw new NftException("nft printed output that is not JSON: " + abbreviate(out), e);
    }
  }

  /**
   * Runs a script in nft's own syntax as one atomic transaction (libnftables reads it when it is not JSON), for a
   * table written whole; returns the output parsed as JSON.
   */
  @Override
  public JsonNode runScript(String script) {
    Outcome result = execute(script, false, false);
    if (result.rc() != 0) {
      throw failure(result.err(), abbreviate(script), thread.describe());
    }
    String out = result.out().trim();
    try {
      return out.isEmpty() ? JSON.createObjectNode().set("nftables", JSON.createArrayNode()) : JSON.readTree(out);
    } catch (JsonProcessingException e) {
      throw new NftException("nft printed output that is not JSON: " + abbreviate(out), e);
    }
  }

  /**
   * {@code nft -c -f -}: the kernel validates {@code script} as it would commit it, then aborts the transaction, so
   * nothing changes; the kernel's refusal throws as {@link #runScript} does.
   */
  public void checkScript(String script) {
    Outcome result = execute(script, true, false); // its output is drained there, so the next command does not print it
    if (result.rc() != 0) {
      throw failure(result.err(), abbreviate(script), thread.describe());
    }
  }

  /** What one {@code nft_run_cmd_from_buffer} returned and printed. */
  private record Outcome(int rc, String out, String err) {}

  /**
   * One {@code nft_run_cmd_from_buffer} on the client's thread, both buffers read (and so emptied) after it; with
   * {@code dryRun}, in check mode, and with {@code terse}, listing sets without their elements, for this call only.
   */
  private Outcome execute(String buffer, boolean dryRun, boolean terse) {
    return thread.call(
        () -> {
          if (ctx == null) {
            throw new IllegalStateException("NftClient is closed");
          }
          if (dryRun) {
            lib.nft_ctx_set_dry_run(ctx, true);
          }
          int flags = lib.nft_ctx_output_get_flags(ctx);
          if (terse) {
            lib.nft_ctx_output_set_flags(ctx, flags | Libnftables.NFT_CTX_OUTPUT_TERSE);
          }
          try {
            int rc = lib.nft_run_cmd_from_buffer(ctx, buffer);
            String out = lib.nft_ctx_get_output_buffer(ctx);
            String err = lib.nft_ctx_get_error_buffer(ctx);
            trim.passed(buffer.length() + (out == null ? 0 : out.length()));
            return new Outcome(rc, out == null ? "" : out, err == null ? "" : err);
          } finally {
            if (dryRun) {
              lib.nft_ctx_set_dry_run(ctx, false);
            }
            if (terse) {
              lib.nft_ctx_output_set_flags(ctx, flags);
            }
          }
        });
  }

  /** {@code nft -j list table FAMILY NAME}; throws {@link NftException} (isNotFound) when absent. */
  public JsonNode listTable(String family, String name) {
    ObjectNode doc = JSON.createObjectNode();
    doc.putArray("nftables").addObject().putObject("list").putObject("table").put("family", family).put("name", name);
    return run(doc);
  }

  /** Like {@link #listTable} but empty when the table does not exist. */
  @Override
  public Optional<JsonNode> listTableIfPresent(String family, String name) {
    return unlessNotFound(() -> listTable(family, name));
  }

  /**
   * The definitions of table {@code name}: the table, its chains with their rules, its sets and maps without their
   * elements ({@code nft -j -t list ruleset FAMILY}, the items of other tables left out); empty when the table does not
   * exist. The elements are read with {@link #setElements}.
   *
   * <p>Why not {@code nft -t list table}: nft 1.0.6 still fetches every element of the table for it (55,000 elements:
   * 0.5 s and 72 MiB of native memory; without {@code -t}, 1 s and 144 MiB), while the terse ruleset listing fetches
   * none (10 ms, 4 MiB). Before nftables 0.9.1 the terse flag is unknown and the listing carries the elements, which
   * the readers ignore.
   */
  @Override
  public Optional<JsonNode> tableDefinitionsIfPresent(String family, String name) {
    Outcome result = execute("list ruleset " + family, false, true);
    if (result.rc() != 0) {
      throw failure(result.err(), "list ruleset " + family, thread.describe());
    }
    JsonNode all;
    try {
      String out = result.out().trim();
      all = out.isEmpty() ? JSON.createObjectNode() : JSON.readTree(out);
    } catch (JsonProcessingException e) {
      throw new NftException("nft printed output that is not JSON: " + abbreviate(result.out()), e);
    }
    ObjectNode mine = JSON.createObjectNode();
    ArrayNode items = mine.putArray("nftables");
    boolean present = false;
    for (JsonNode item : all.path("nftables")) {
      Map.Entry<String, JsonNode> only = item.fields().hasNext() ? item.fields().next() : null;
      if (only == null || !only.getValue().path("family").asText().equals(family)) {
        continue;
      }
      JsonNode body = only.getValue();
      if (only.getKey().equals("table") ? body.path("name").asText().equals(name)
          : body.path("table").asText().equals(name)) {
        present |= only.getKey().equals("table");
        items.add(item);
      }
    }
    return present ? Optional.of(mine) : Optional.empty();
  }

  /**
   * The elements of set or map {@code set} of table {@code table}, reduced by {@code collector} as they stream from
   * the kernel ({@link NftSetElements}: one 64 KiB buffer whatever the set holds, one ruleset generation per
   * result); empty when the table or the set does not exist.
   *
   * @throws NftException when the kernel refuses ({@link NftException.PermissionDenied} without CAP_NET_ADMIN)
   */
  @Override
  public <R> Optional<R> setElements(String family, String table, String set, Collector<SetElement, ?, R> collector) {
    try {
      return elements().collect(family, table, set, collector);
    } catch (NetlinkException.PermissionDenied e) {
      throw new NftException.PermissionDenied("cannot read the elements of " + family + " " + table + " " + set
          + ": CAP_NET_ADMIN is required in " + describe() + " (" + e.getMessage() + ")", e.getMessage());
    } catch (NetlinkException e) {
      throw new NftException("cannot read the elements of " + family + " " + table + " " + set + " in " + describe()
          + ": " + e.getMessage(), e);
    }
  }

  private synchronized NftSetElements elements() {
    if (elements == null) {
      elements = NftSetElements.open(thread);
    }
    return elements;
  }

  /**
   * The named counters of a table, empty when the table does not exist. Read over nfnetlink ({@link NftCounters}):
   * libnftables' {@code list counters} reads every element of every set of the namespace into its cache first
   * (0.6 s and 70 MiB of native memory beside 55,000 sources); this reads a few hundred bytes.
   *
   * @throws NftException when the kernel refuses
   */
  @Override
  public Optional<List<NftCounters.Counter>> countersIfPresent(String family, String table) {
    try {
      return counters().of(family, table);
    } catch (NetlinkException e) {
      throw new NftException("cannot read the counters of table " + family + " " + table + " in " + describe()
          + ": " + e.getMessage(), e);
    }
  }

  /**
   * Whether a table exists, without listing anything of it (a listing of a table with thousands of set elements
   * costs as many).
   *
   * @throws NftException when the kernel refuses
   */
  @Override
  public boolean tablePresent(String family, String table) {
    try {
      return counters().tablePresent(family, table);
    } catch (NetlinkException e) {
      throw new NftException("cannot look up table " + family + " " + table + " in " + describe() + ": "
          + e.getMessage(), e);
    }
  }

  private synchronized NftCounters counters() {
    if (counters == null) {
      counters = NftCounters.open(thread);
    }
    return counters;
  }

  /** {@code listing}'s result, or empty when nft answers that the table does not exist. */
  private static Optional<JsonNode> unlessNotFound(java.util.function.Supplier<JsonNode> listing) {
    try {
      return Optional.of(listing.get());
    } catch (NftException e) {
      if (e.isNotFound()) {
        return Optional.empty();
      }
      throw e;
    }
  }

  static NftException failure(String nftError, String summary, String where) {
    String err = nftError.strip();
    if (err.contains("Operation not permitted")) {
      return new NftException.PermissionDenied(
          "nft: Operation not permitted: CAP_NET_ADMIN is required in " + where + " (" + summary + ")", err);
    }
    return new NftException("nft failed in " + where + " (" + summary + "): " + abbreviate(err), err, null);
  }

  /** E.g. "3 commands: add table, add chain, add element x2 (10 elements)". */
  static String summarize(JsonNode doc) {
    JsonNode cmds = doc.path("nftables");
    if (!cmds.isArray()) {
      return "not an {\"nftables\":[...]} document";
    }
    Map<String, Integer> counts = new LinkedHashMap<>();
    int elements = 0;
    for (JsonNode cmd : cmds) {
      Iterator<Map.Entry<String, JsonNode>> fields = cmd.properties().iterator();
      if (!fields.hasNext()) {
        counts.merge("{}", 1, Integer::sum);
        continue;
      }
      Map.Entry<String, JsonNode> verb = fields.next();
      String object = verb.getValue().isObject() && verb.getValue().fieldNames().hasNext()
          ? verb.getValue().fieldNames().next()
          : "?";
      counts.merge(verb.getKey() + " " + object, 1, Integer::sum);
      JsonNode elem = verb.getValue().path(object).path("elem");
      if (elem instanceof ArrayNode a) {
        elements += a.size();
      }
    }
    StringBuilder sb = new StringBuilder();
    sb.append(cmds.size()).append(cmds.size() == 1 ? " command: " : " commands: ");
    int i = 0;
    for (Map.Entry<String, Integer> e : counts.entrySet()) {
      if (i++ > 0) {
        sb.append(", ");
      }
      sb.append(e.getKey());
      if (e.getValue() > 1) {
        sb.append(" x").append(e.getValue());
      }
    }
    if (elements > 0) {
      sb.append(" (").append(elements).append(elements == 1 ? " element)" : " elements)");
    }
    return sb.toString();
  }

  private static String abbreviate(String s) {
    return s.length() <= 2000 ? s : s.substring(0, 2000) + "... (" + s.length() + " chars)";
  }

  /** Frees the context (on its thread). The thread itself belongs to the caller. */
  @Override
  public void close() {
    synchronized (this) {
      if (counters != null) {
        counters.close();
        counters = null;
      }
      if (elements != null) {
        elements.close();
        elements = null;
      }
    }
    try {
      thread.call(
          () -> {
            if (ctx != null) {
              lib.nft_ctx_free(ctx);
              ctx = null;
            }
            return null;
          });
    } catch (java.util.concurrent.RejectedExecutionException e) {
      // The thread was closed first; its context dies with it (and the process).
    }
  }
}
