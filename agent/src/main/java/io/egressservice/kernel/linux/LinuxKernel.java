package io.egressservice.kernel.linux;

import io.egressservice.kernel.Flows;
import io.egressservice.kernel.GenerationSource;
import io.egressservice.kernel.Kernel;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.netlink.Conntrack;
import io.egressservice.netlink.ConntrackAnswer;
import io.egressservice.netlink.ConntrackDump;
import io.egressservice.netlink.ConntrackEntry;
import io.egressservice.netlink.ConntrackKey;
import io.egressservice.netlink.NetlinkException;
import io.egressservice.netlink.NetnsThread;
import io.egressservice.netlink.NftGeneration;
import io.egressservice.netlink.RtNetlink;
import io.egressservice.netlink.Routing;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * Linux: one thread in the namespace (every call runs there), rtnetlink on it, a libnftables context per reader,
 * the nftables generation over NETLINK_NETFILTER, conntrack over NETLINK_NETFILTER, sysctls from /proc/sys as that
 * thread sees it.
 */
public final class LinuxKernel implements Kernel {
  private static final Path IPV4_CONF = Path.of("/proc/sys/net/ipv4/conf");

  private final NetnsThread thread;
  /** Whether {@link #close()} ends {@link #thread} (entered for this kernel) or leaves it to its owner. */
  private final boolean ownsThread;
  private final RtNetlink netlink;
  private final Function<NetnsThread, GenerationSource> generation;
  private final Flows flows;

  private LinuxKernel(NetnsThread thread, boolean ownsThread, RtNetlink netlink,
      Function<NetnsThread, GenerationSource> generation) {
    this.thread = thread;
    this.ownsThread = ownsThread;
    this.netlink = netlink;
    this.generation = generation;
    this.flows = new ConntrackFlows(new Conntrack(thread));
  }

  /**
   * Enters {@code netns} (empty: the process's own namespace) on a thread of its own.
   *
   * @throws NetlinkException when the namespace does not exist or the process lacks privileges
   */
  public static LinuxKernel open(Optional<String> netns) {
    return open(netns, LinuxKernel::generation);
  }

  /**
   * The same, the nftables generation read from what {@code generation} makes on the namespace's thread (for tests
   * and benchmarks: {@code t -> GenerationSource.unavailable("off")} makes every reader list).
   */
  public static LinuxKernel open(Optional<String> netns, Function<NetnsThread, GenerationSource> generation) {
    NetnsThread thread = NetnsThread.enter(netns);
    try {
      return new LinuxKernel(thread, true, RtNetlink.open(thread), generation);
    } catch (RuntimeException | Error e) {
      thread.close();
      throw e;
    }
  }

  /** The kernel of the namespace {@code thread} lives in; the thread stays its owner's ({@link #close()} leaves it). */
  public static LinuxKernel on(NetnsThread thread) {
    return new LinuxKernel(thread, false, RtNetlink.open(thread), LinuxKernel::generation);
  }

  /** The thread that lives in the namespace: what must run there (a socket bound inside it) runs on it. */
  public NetnsThread thread() {
    return thread;
  }

  /** The rtnetlink connection itself (counters for tests and benchmarks). */
  public RtNetlink netlink() {
    return netlink;
  }

  @Override
  public String describe() {
    return thread.describe();
  }

  @Override
  public Optional<String> netns() {
    return thread.netns();
  }

  @Override
  public Routing routing() {
    return netlink;
  }

  @Override
  public NftClient openNftables() {
    return NftClient.open(thread);
  }

  @Override
  public GenerationSource openGeneration() {
    return generation.apply(thread);
  }

  @Override
  public Flows flows() {
    return flows;
  }

  @Override
  public Optional<Integer> ipv4Conf(String device, String setting) {
    return thread.call(() -> {
      try {
        return Optional.of(Integer.parseInt(Files.readString(IPV4_CONF.resolve(device).resolve(setting)).trim()));
      } catch (IOException | NumberFormatException | InvalidPathException e) {
        return Optional.<Integer>empty();
      }
    });
  }

  /**
   * The kernel's generation over NETLINK_NETFILTER ({@link NftGeneration}); when the socket cannot even be opened,
   * a source that fails on every read, with that reason.
   */
  public static GenerationSource generation(NetnsThread thread) {
    NftGeneration gen;
    try {
      gen = NftGeneration.open(thread);
    } catch (NetlinkException | IllegalStateException | UnsatisfiedLinkError e) {
      return GenerationSource.unavailable("cannot open a NETLINK_NETFILTER socket in " + thread.describe() + ": "
          + e.getMessage());
    }
    return new GenerationSource() {
      @Override
      public long read() {
        return gen.read();
      }

      @Override
      public void close() {
        gen.close();
      }
    };
  }

  @Override
  public void close() {
    try {
      netlink.close();
    } finally {
      if (ownsThread) {
        thread.close();
      }
    }
  }

  /** {@link Conntrack} in the namespace (it runs every call on the namespace's thread). */
  private record ConntrackFlows(Conntrack conntrack) implements Flows {
    @Override
    public ConntrackDump dump(Set<IpFamily> families, Predicate<ConntrackEntry> keep) {
      return conntrack.dump(families, keep);
    }

    @Override
    public ConntrackDump dumpFrom(IpPrefix source, Predicate<ConntrackEntry> keep) {
      return conntrack.dumpFrom(source, keep);
    }

    @Override
    public List<ConntrackAnswer> delete(List<ConntrackKey> keys) {
      return conntrack.delete(keys);
    }
  }
}
