package io.egressservice.allocator;

import io.egressservice.health.ProbeIdentity;
import io.egressservice.health.ProbeKeys;
import io.egressservice.health.ProbeProof;
import io.egressservice.metrics.ProbeMetrics;
import io.egressservice.netlink.NetnsThread;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Probes {@code GET /healthz} of the agents of a set of nodes over plain HTTP/1.0, each node every {@code
 * interval} with a {@code timeout} for connect and answer together; probes of one node may overlap (a silent node
 * is noticed after {@code failures} intervals plus one timeout, not after {@code failures} timeouts). Results go
 * to a listener with their per-node sequence number. Read-only towards the API server: it opens TCP connections to
 * the nodes only. What each outcome means: {@link #probeOnce}.
 *
 * <p>Each probe carries a fresh challenge ({@link ProbeProof}); with a probe key the answer counts only with a valid
 * proof for the probed node ({@link HostProbes.ProofMode} says what an unproved answer is worth meanwhile).
 *
 * <p>With a probe namespace (tests: the namespace cluster's node network) the sockets are created inside it.
 */
public final class AgentProber implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(AgentProber.class);
  private static final Duration STRANGER_WARNING_EVERY = Duration.ofMinutes(1);

  /** Receives every result. */
  public interface Listener {
    void result(String node, long seq, ProbeResult result);
  }

  /** Hears of every answer that did not prove to be its node's agent's ({@link ProbeMetrics}' reasons). */
  public interface Unproven {
    void answer(String node, InetSocketAddress address, String reason);
  }

  private final Duration interval;
  private final Duration timeout;
  private final Optional<NetnsThread> netns;
  private final Listener listener;
  private final ScheduledExecutorService pool;
  private final Map<String, Target> targets = new HashMap<>();
  private final Map<String, Long> strangerWarnings = new ConcurrentHashMap<>();
  private final ProbeKeys keys;
  private final HostProbes.ProofMode mode;
  private final Unproven unproven;
  private final SecureRandom random = new SecureRandom();
  /** Nodes whose agent has proven an answer to this allocator (they must go on proving, whatever the mode). */
  private final Set<String> proven = ConcurrentHashMap.newKeySet();

  private final class Target {
    final InetSocketAddress address;
    final AtomicLong seq = new AtomicLong();
    final ScheduledFuture<?> task;

    Target(String node, InetSocketAddress address) {
      this.address = address;
      this.task = pool.scheduleAtFixedRate(() -> probe(node, this), 0, interval.toNanos(), TimeUnit.NANOSECONDS);
    }
  }

  /**
   * @param threads probes in flight at once at most (a probe takes at most {@code timeout}; about hosts x timeout
   *     / interval are needed)
   */
  public AgentProber(Duration interval, Duration timeout, int threads, Optional<String> probeNetns, Listener listener) {
    this(interval, timeout, threads, probeNetns, ProbeKeys.none(), HostProbes.ProofMode.REQUIRE, listener,
        (node, address, reason) -> {});
  }

  /**
   * @param keys the probe key (none: answers are taken by the node they name)
   * @param mode what an unproved answer is worth while there is a key
   */
  public AgentProber(Duration interval, Duration timeout, int threads, Optional<String> probeNetns, ProbeKeys keys,
      HostProbes.ProofMode mode, Listener listener, Unproven unproven) {
    this.keys = Objects.requireNonNull(keys);
    this.mode = Objects.requireNonNull(mode);
    this.unproven = Objects.requireNonNull(unproven);
    if (!keys.configured()) {
      LOG.warn("no probe key (--probe-key-file): the agents' answers are taken by the node they name, unproved; "
          + "whoever answers on a node's port 9464 speaks for its agent (docs/operate.md, \"Probe proofs\")");
    }
    this.interval = Objects.requireNonNull(interval);
    this.timeout = Objects.requireNonNull(timeout);
    this.listener = Objects.requireNonNull(listener);
    this.netns = probeNetns.map(n -> NetnsThread.enter(Optional.of(n)));
    this.pool = Executors.newScheduledThreadPool(threads, r -> {
      Thread t = new Thread(r, "egress-allocator-probe");
      t.setDaemon(true);
      return t;
    });
  }

  /** Probes exactly these nodes from now on (a node whose address changed starts over). */
  public synchronized void probe(Map<String, InetSocketAddress> wanted) {
    targets.entrySet().removeIf(e -> {
      boolean drop = !e.getValue().address.equals(wanted.get(e.getKey()));
      if (drop) {
        e.getValue().task.cancel(false);
      }
      return drop;
    });
    wanted.forEach((node, address) -> targets.computeIfAbsent(node, n -> new Target(n, address)));
    strangerWarnings.keySet().retainAll(wanted.keySet());
  }

  private void probe(String node, Target target) {
    long seq = target.seq.getAndIncrement();
    ProbeResult r = probeOnce(node, target.address);
    synchronized (this) {
      if (targets.get(node) != target) {
        return;
      }
    }
    listener.result(node, seq, r);
  }

  /**
   * One probe: connect, {@code GET /healthz} with a fresh challenge, the answer's head, all within the timeout.
   *
   * <ul>
   *   <li>No handshake (the SYN times out, no route): {@link ProbeResult#NO_ANSWER}, the node is off or cut off.</li>
   *   <li>Refused, or a completed handshake and then no complete answer head in time (a reset, a close, silence):
   *       {@link ProbeResult#AGENT_DOWN}. The node's kernel completed the handshake, so the node is up; a stopped
   *       or starved agent's listening socket still does (the kernel queues the connection for it), and its kernel
   *       state goes on forwarding meanwhile.</li>
   *   <li>An answer that is not provably {@code node}'s agent's: {@link ProbeResult#UNPROVEN}, as a refused
   *       connection (something on the node's address answers, not its agent). That is an answer naming another node
   *       ({@link ProbeIdentity#NODE_HEADER}) or none, and, while there is a probe key, one without a valid proof
   *       ({@link ProbeProof}) unless {@link HostProbes.ProofMode#LEARN} takes it by its name.</li>
   *   <li>{@code node}'s agent's answer: {@link ProbeResult#HEALTHY} on 200, else {@link ProbeResult#AGENT_DOWN}.</li>
   * </ul>
   */
  ProbeResult probeOnce(String node, InetSocketAddress address) {
    long deadline = System.nanoTime() + timeout.toNanos();
    String challenge = ProbeProof.newChallenge(random);
    try (Socket s = socket()) {
      try {
        s.connect(address, (int) Math.max(1, timeout.toMillis()));
      } catch (SocketTimeoutException e) {
        return ProbeResult.NO_ANSWER;
      } catch (ConnectException e) {
        // Refused: the node's kernel answered with a reset, nothing listens. Unreachable host or network: no answer.
        return String.valueOf(e.getMessage()).contains("refused") ? ProbeResult.AGENT_DOWN : ProbeResult.NO_ANSWER;
      }
      Optional<ProbeAnswer> answer;
      try {
        answer = exchange(s, address, challenge, deadline);
      } catch (SocketTimeoutException e) {
        LOG.debug("probe of {} ({}): connected, no answer within {} ms", node, address, timeout.toMillis());
        return ProbeResult.AGENT_DOWN;
      }
      if (answer.isEmpty()) {
        return ProbeResult.AGENT_DOWN;
      }
      return judge(node, address, challenge, answer.get());
    } catch (IOException e) {
      // A connection reset or closed mid-answer: the node is up, the agent is not answering properly.
      String m = String.valueOf(e.getMessage());
      LOG.debug("probe of {} ({}): {}", node, address, m);
      return m.contains("unreachable") || m.contains("No route") ? ProbeResult.NO_ANSWER : ProbeResult.AGENT_DOWN;
    }
  }

  /** Whose answer it is ({@link #probeOnce}'s list), and what it says. */
  private ProbeResult judge(String node, InetSocketAddress address, String challenge, ProbeAnswer answer) {
    Optional<String> says = answer.header(ProbeIdentity.NODE_HEADER);
    ProbeResult byStatus = answer.status() == 200 ? ProbeResult.HEALTHY : ProbeResult.AGENT_DOWN;
    List<ProbeKeys.Key> accepted = keys.now().accepted();
    String why;
    if (!says.equals(Optional.of(node))) {
      why = says.isPresent() ? ProbeMetrics.OTHER_NODE : ProbeMetrics.NO_NODE;
    } else if (accepted.isEmpty()) {
      return byStatus;
    } else if (ProbeProof.verify(accepted, answer.header(ProbeProof.PROOF_HEADER), challenge, node,
        answer.header(ProbeIdentity.POD_UID_HEADER), answer.status())) {
      proven.add(node);
      return byStatus;
    } else if (answer.header(ProbeProof.PROOF_HEADER).isPresent()) {
      why = ProbeMetrics.BAD_PROOF;
    } else if (mode == HostProbes.ProofMode.LEARN && !proven.contains(node)) {
      unproven.answer(node, address, ProbeMetrics.NO_PROOF_LEARNING);
      warn(node, address, answer.status(), "answers without proof (an agent without the probe key, or older than "
          + "the proofs): taken by the node it names until that node's agent proves an answer");
      return byStatus;
    } else {
      why = ProbeMetrics.NO_PROOF;
    }
    unproven.answer(node, address, why);
    warn(node, address, answer.status(), switch (why) {
      case ProbeMetrics.OTHER_NODE -> "that is the agent of node " + says.get() + " or claims to be (is the node's "
          + "InternalIP right?)";
      case ProbeMetrics.NO_NODE -> "another process, not this node's agent, holds the port (its agent logs which)";
      case ProbeMetrics.BAD_PROOF -> "its proof does not verify under the probe key " + fingerprints(accepted)
          + ": an agent with another key, or not an agent";
      default -> "it carries no proof: another process answers for the node (a Service's externalIP or a "
          + "hostPort on the port?), or its agent has no probe key";
    } + "; counted as a refused connection");
    return ProbeResult.UNPROVEN;
  }

  private static String fingerprints(List<ProbeKeys.Key> keys) {
    return String.join(" or ", keys.stream().map(ProbeKeys.Key::fingerprint).toList());
  }

  /** Once a minute per node at most: every probe of it would say the same. */
  private void warn(String node, InetSocketAddress address, int status, String what) {
    long now = System.nanoTime();
    Long last = strangerWarnings.get(node);
    if (last != null && now - last < STRANGER_WARNING_EVERY.toNanos()) {
      return;
    }
    strangerWarnings.put(node, now);
    LOG.warn("node {}: {} answered {} on its health port: {}", node, address,
        status == 0 ? "without HTTP" : Integer.toString(status), what);
  }

  /** Sends the request and reads the answer's head; empty when the connection ends before the head does. */
  private static Optional<ProbeAnswer> exchange(Socket s, InetSocketAddress address, String challenge,
      long deadline) throws IOException {
    OutputStream out = s.getOutputStream();
    String host = address.getAddress().getHostAddress();
    out.write(("GET /healthz HTTP/1.0\r\nHost: " + (host.contains(":") ? "[" + host + "]" : host)
        + "\r\n" + ProbeProof.CHALLENGE_HEADER + ": " + challenge + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
    out.flush();
    InputStream in = s.getInputStream();
    byte[] head = new byte[ProbeAnswer.MAX_HEAD];
    int n = 0;
    while (n < head.length) {
      long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
      if (left < 1) {
        throw new SocketTimeoutException("no complete answer in time");
      }
      s.setSoTimeout((int) left);
      int k = in.read(head, n, head.length - n);
      if (k < 0) {
        break;
      }
      n += k;
      Optional<ProbeAnswer> a = ProbeAnswer.parse(head, n);
      if (a.isPresent()) {
        return a;
      }
    }
    // a head larger than any agent sends is someone else's answer: it names no node
    return n == head.length ? Optional.of(ProbeAnswer.NAMELESS) : Optional.empty();
  }

  private Socket socket() throws IOException {
    if (netns.isEmpty()) {
      return new Socket();
    }
    try {
      return netns.get().call(() -> SocketChannel.open().socket());
    } catch (RuntimeException e) {
      throw new IOException("cannot open a socket in the probe namespace: " + e.getMessage(), e);
    }
  }

  @Override
  public synchronized void close() {
    targets.values().forEach(t -> t.task.cancel(false));
    targets.clear();
    pool.shutdownNow();
    netns.ifPresent(NetnsThread::close);
  }
}
