package io.egressservice.kernel;

import com.fasterxml.jackson.databind.JsonNode;
import io.egressservice.netlink.NftCounters;
import io.egressservice.netlink.SetElement;
import java.util.List;
import java.util.Optional;
import java.util.stream.Collector;

/**
 * nftables of one network namespace, in libnftables-json(5) documents ({@code {"nftables":[...]}}) in and out. One
 * {@link #run} is one transaction: every command takes effect or none does.
 */
public interface Nftables extends AutoCloseable {
  /** The namespace, for messages. */
  String describe();

  /**
   * Runs the commands as one transaction; their output parsed ({@code {"nftables":[]}} when there is none).
   *
   * @throws NftException with nft's error text; nothing was applied
   */
  JsonNode run(JsonNode commands);

  /** The same for a script in nft's own syntax. */
  JsonNode runScript(String script);

  /** {@code nft -j list table FAMILY NAME}, elements and counters included; empty when the table does not exist. */
  Optional<JsonNode> listTableIfPresent(String family, String name);

  /**
   * The table, its chains with their rules, its sets and maps without their elements, as {@code nft -j -t list}
   * prints them; empty when the table does not exist.
   */
  Optional<JsonNode> tableDefinitionsIfPresent(String family, String name);

  /** The elements of a set or map, reduced as they are read; empty when the table or the set does not exist. */
  <R> Optional<R> setElements(String family, String table, String set, Collector<SetElement, ?, R> collector);

  /** The named counters of a table; empty when the table does not exist. */
  Optional<List<NftCounters.Counter>> countersIfPresent(String family, String table);

  /** Whether the table exists, without listing it. */
  boolean tablePresent(String family, String table);

  @Override
  void close();
}
