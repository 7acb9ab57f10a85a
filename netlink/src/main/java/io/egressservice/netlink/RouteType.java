package io.egressservice.netlink;

/** {@code rtm_type} of a route ({@code RTN_*}); kinds this library does not model are OTHER. */
public enum RouteType {
  UNICAST,
  LOCAL,
  BROADCAST,
  BLACKHOLE,
  UNREACHABLE,
  PROHIBIT,
  THROW,
  OTHER;

  int rtn() {
    return switch (this) {
      case UNICAST -> NetlinkConstants.RTN_UNICAST;
      case LOCAL -> NetlinkConstants.RTN_LOCAL;
      case BROADCAST -> NetlinkConstants.RTN_BROADCAST;
      case BLACKHOLE -> NetlinkConstants.RTN_BLACKHOLE;
      case UNREACHABLE -> NetlinkConstants.RTN_UNREACHABLE;
      case PROHIBIT -> NetlinkConstants.RTN_PROHIBIT;
      case THROW -> NetlinkConstants.RTN_THROW;
      case OTHER -> throw new IllegalArgumentException("route type OTHER cannot be sent to the kernel");
    };
  }

  static RouteType fromRtn(int rtn) {
    return switch (rtn) {
      case NetlinkConstants.RTN_UNICAST -> UNICAST;
      case NetlinkConstants.RTN_LOCAL -> LOCAL;
      case NetlinkConstants.RTN_BROADCAST -> BROADCAST;
      case NetlinkConstants.RTN_BLACKHOLE -> BLACKHOLE;
      case NetlinkConstants.RTN_UNREACHABLE -> UNREACHABLE;
      case NetlinkConstants.RTN_PROHIBIT -> PROHIBIT;
      case NetlinkConstants.RTN_THROW -> THROW;
      default -> OTHER;
    };
  }
}
