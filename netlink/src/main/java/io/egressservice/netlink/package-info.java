/**
 * A small rtnetlink (NETLINK_ROUTE) library on JNA: policy routing rules (read/write, both families),
 * routes (read/write, batched, with ip/ip6 lightweight-tunnel encapsulation), links (read: index, name,
 * kind, VRF table, alias, MTU, state, VXLAN settings; write: create a collect-metadata VXLAN device, set
 * MTU/state/alias, delete), addresses (read, add) and change notifications. It knows nothing about Kubernetes.
 *
 * <p>Layers: immutable model records ({@link io.egressservice.netlink.Rule}, {@link
 * io.egressservice.netlink.Route}, {@link io.egressservice.netlink.Link}, ...) with no JNA; the wire
 * encoding in package-private classes ({@code NetlinkMessageWriter}, {@code NetlinkMessage},
 * {@code NetlinkAttributes}, {@code NetlinkConstants}, and the per-object codecs {@code RuleCodec},
 * {@code RouteCodec}, {@code LinkCodec}), tested byte for byte without root; the only JNA user, {@code
 * NetlinkSocket}; {@code NetlinkChannel}, which carries requests, dumps and batches over it; and {@link
 * io.egressservice.netlink.RtNetlink}, the per-namespace connection ({@code Notifications} reads its change
 * notifications).
 *
 * <p>nf_tables over NETLINK_NETFILTER, read only: the ruleset generation ({@link
 * io.egressservice.netlink.NftGeneration}), a table's named counters ({@link io.egressservice.netlink.NftCounters})
 * and one set's or map's elements, streamed ({@link io.egressservice.netlink.NftSetElements}, with {@link
 * io.egressservice.netlink.NftIntervals} for interval sets), all over the package-private {@code NftSocket}: reads
 * that do not go through libnftables, whose listings build the whole ruleset in native memory.
 *
 * <p>Threading: {@code setns(2)} is per thread, so each connection's socket is created and used on a
 * {@link io.egressservice.netlink.NetnsThread}; public methods may be called from any thread. There
 * is no static mutable state: two connections to two namespaces are independent.
 *
 * <p>Each operation's Javadoc names its iproute2 equivalent; iproute2 is also the oracle of the
 * kernel tests.
 */
package io.egressservice.netlink;
