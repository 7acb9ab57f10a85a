package io.egressservice.netlink;

import java.util.Objects;

/** One step of a {@link RtNetlink#applyRoutes batch}: add or delete a route. */
public record RouteChange(Op op, Route route) {
  public enum Op {
    ADD,
    DELETE
  }

  public RouteChange {
    Objects.requireNonNull(op, "op");
    Objects.requireNonNull(route, "route");
  }

  public static RouteChange add(Route route) {
    return new RouteChange(Op.ADD, route);
  }

  public static RouteChange delete(Route route) {
    return new RouteChange(Op.DELETE, route);
  }

  @Override
  public String toString() {
    return (op == Op.ADD ? "add" : "del") + " ip route '" + route + "'";
  }
}
