package io.egressservice.nft.table;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * The libnftables-json(5) expressions and statements the agent's rules are made of, in the form nft 1.0.6 reads
 * and prints them. A rule is the list of its statements: {@link #rule}.
 */
public final class Expr {
  private static final JsonNodeFactory F = JsonNodeFactory.instance;

  private Expr() {}

  /** A rule: its statements in order. */
  public static ArrayNode rule(JsonNode... statements) {
    ArrayNode rule = F.arrayNode();
    for (JsonNode s : statements) {
      rule.add(s);
    }
    return rule;
  }

  /** {@code left op right}; {@code op} is {@code ==}, {@code !=} or {@code in}. */
  public static ObjectNode match(JsonNode left, String op, JsonNode right) {
    ObjectNode match = F.objectNode();
    match.put("op", op).set("left", left);
    match.set("right", right);
    return wrap("match", match);
  }

  /** {@code left == right}. */
  public static ObjectNode is(JsonNode left, JsonNode right) {
    return match(left, "==", right);
  }

  /** {@code left != right}. */
  public static ObjectNode isNot(JsonNode left, JsonNode right) {
    return match(left, "!=", right);
  }

  /** {@code left @set}: the value is in the set. */
  public static ObjectNode in(JsonNode left, String set) {
    return is(left, setRef(set));
  }

  /** {@code left != @set}. */
  public static ObjectNode notIn(JsonNode left, String set) {
    return isNot(left, setRef(set));
  }

  /** A reference to a named set or map of the same table: {@code @name}. */
  public static JsonNode setRef(String set) {
    return F.textNode("@" + set);
  }

  public static JsonNode text(String value) {
    return F.textNode(value);
  }

  public static JsonNode number(long value) {
    return F.numberNode(value);
  }

  /** A header field: {@code ip saddr}, {@code udp dport}. */
  public static ObjectNode payload(String protocol, String field) {
    return wrap("payload", F.objectNode().put("protocol", protocol).put("field", field));
  }

  /** {@code meta iifname}, {@code meta mark}, {@code meta nfproto}. */
  public static ObjectNode meta(String key) {
    return wrap("meta", F.objectNode().put("key", key));
  }

  /** {@code ct direction}, {@code ct state}, {@code ct status}. */
  public static ObjectNode ct(String key) {
    return wrap("ct", F.objectNode().put("key", key));
  }

  /** {@code left . right}. */
  public static ObjectNode concat(JsonNode... parts) {
    ArrayNode all = F.arrayNode();
    for (JsonNode p : parts) {
      all.add(p);
    }
    return wrap("concat", all);
  }

  /** {@code left & right}; {@code right} a number or a list of flag names. */
  public static ObjectNode and(JsonNode left, JsonNode right) {
    return wrap("&", F.arrayNode().add(left).add(right));
  }

  /** {@code left | right}. */
  public static ObjectNode or(JsonNode left, JsonNode right) {
    return wrap("|", F.arrayNode().add(left).add(right));
  }

  /** A list of flag names ({@code snat | confirmed}). */
  public static ArrayNode flags(String... names) {
    ArrayNode all = F.arrayNode();
    for (String n : names) {
      all.add(n);
    }
    return all;
  }

  /** {@code key set value}, e.g. {@code meta mark set ...}. */
  public static ObjectNode set(JsonNode key, JsonNode value) {
    ObjectNode mangle = F.objectNode();
    mangle.set("key", key);
    mangle.set("value", value);
    return wrap("mangle", mangle);
  }

  /** {@code counter name "NAME"}: counts into the table's named counter. */
  public static ObjectNode counter(String name) {
    return F.objectNode().put("counter", name);
  }

  public static ObjectNode drop() {
    return F.objectNode().putNull("drop");
  }

  private static ObjectNode wrap(String key, JsonNode body) {
    ObjectNode o = F.objectNode();
    o.set(key, body);
    return o;
  }
}
