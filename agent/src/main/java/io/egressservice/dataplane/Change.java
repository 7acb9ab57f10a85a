package io.egressservice.dataplane;

/**
 * One kernel change, described for people: {@code + rule 5000: from 10.0.0.5 lookup 100} for service
 * {@code ns/svc}.
 *
 * @param service the EgressService it belongs to, {@code (in-cluster)} for throw routes, (old) P-1
 *     rules and the in-cluster sets, {@code (base)} for the nft table itself, {@code (steering)} for the
 *     steering device and routes, or {@code (unknown)} for an owned object
 *     this agent process did not apply and nothing in the kernel names (a deleted rule otherwise carries the
 *     label it was added with, see {@link AppliedRules})
 */
public record Change(Op op, Kind kind, String service, String description) {
  public enum Op {
    ADD("+"),
    DELETE("-"),
    REPLACE("~");

    private final String symbol;

    Op(String symbol) {
      this.symbol = symbol;
    }

    public String symbol() {
      return symbol;
    }
  }

  public enum Kind {
    RULE,
    ROUTE,
    SNAT,
    IN_CLUSTER,
    NFT_BASE,
    MARK,
    /** A device setting ({@code net.ipv4.conf.<dev>.src_valid_mark}), see {@link ReversePath}. */
    SYSCTL,
    /** The steering device, its address and sysctl, and the steering routes. */
    STEER
  }

  @Override
  public String toString() {
    return op.symbol() + " " + description;
  }
}
