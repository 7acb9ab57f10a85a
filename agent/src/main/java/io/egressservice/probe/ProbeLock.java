package io.egressservice.probe;

import com.sun.jna.LastErrorException;
import com.sun.jna.Native;
import com.sun.jna.Platform;
import io.egressservice.netlink.NetnsThread;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;

/**
 * Makes the in-node probes of one network namespace take turns ({@link NodeNamespaceCheck} writes objects with
 * fixed names there, and removes a killed probe's leftovers by those names): the lock is the abstract unix socket
 * name {@value #NAME}, bound by the holder.
 *
 * <p>Why an abstract socket: its name lives in the network namespace itself (network_namespaces(7): each namespace
 * has its own "UNIX domain abstract socket namespace"), so the lock needs no file, volume or node-level setup and
 * is per node exactly when the probe is (hostNetwork); and it is released by the kernel when the last descriptor
 * closes, so a probe killed with SIGKILL or by the OOM killer never leaves a stale lock. The socket is
 * close-on-exec so that a program the agent starts does not inherit it and keep the lock after the agent is gone. JDK 17's {@code UnixDomainSocketAddress}
 * has no abstract names, hence {@code socket(2)}/{@code bind(2)} through JNA, with {@code sun_path} starting with a
 * NUL byte and the address length counting the name's bytes only (abstract names are not NUL-terminated).
 *
 * <p>Who can take it: any process in the namespace, i.e. on the node every hostNetwork pod and host process
 * (abstract names have no permissions). The worst such a process can do by holding the name is delay the probe:
 * a probe waits for the lock at most {@link NodeNamespaceCheck#LOCK_WAIT}, then the agent starts without the probe's
 * answers, with a WARN naming the lock (see {@link NodeNamespaceCheck}); a probe never removes or writes anything
 * without the lock, and the agent never fails to start because of it.
 */
final class ProbeLock implements AutoCloseable {
  static final String NAME = "egress-service-agent/probe";
  private static final int AF_UNIX = 1;
  private static final int SOCK_STREAM = 1;
  private static final int SOCK_CLOEXEC = 0x80000;
  private static final int EADDRINUSE = 98;
  /** Between tries: a probe holds the lock for ~0.1 s warm, a few seconds at most on a cold, loaded start. */
  private static final long POLL_MILLIS = 25;

  /** The C library, direct-mapped: only what the lock needs. */
  private static final class C {
    static {
      Native.register(C.class, Platform.C_LIBRARY_NAME);
    }

    static native int socket(int domain, int type, int protocol) throws LastErrorException;

    static native int bind(int fd, byte[] addr, int len) throws LastErrorException;

    static native int close(int fd);
  }

  /** Another process in the namespace held the lock for the whole wait. */
  static final class Held extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Held(String message) {
      super(message);
    }
  }

  private final int fd;
  private final Duration waited;
  private boolean closed;

  private ProbeLock(int fd, Duration waited) {
    this.fd = fd;
    this.waited = waited;
  }

  /**
   * Takes the lock of {@code thread}'s namespace (a socket belongs to the namespace of the thread that makes it),
   * trying until {@code bound} has passed.
   *
   * @throws Held when another process held it all that time
   */
  static ProbeLock take(NetnsThread thread, Duration bound) {
    long start = System.nanoTime();
    long deadline = start + bound.toNanos();
    for (boolean first = true; ; first = false) {
      Optional<Integer> fd = tryBind(thread);
      if (fd.isPresent()) {
        return new ProbeLock(fd.get(), first ? Duration.ZERO : Duration.ofNanos(System.nanoTime() - start));
      }
      if (System.nanoTime() - deadline >= 0) {
        throw new Held("another process in " + thread.describe() + " held the kernel probe's lock (abstract unix"
            + " socket @" + NAME + "; 'ss -xap | grep " + NAME + "' on the node shows which) for all of "
            + bound.toMillis() + " ms");
      }
      try {
        Thread.sleep(Math.min(POLL_MILLIS, Math.max(1, (deadline - System.nanoTime()) / 1_000_000)));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new Held("interrupted while waiting for the kernel probe's lock @" + NAME);
      }
    }
  }

  /** The lock, if nobody holds it now. */
  static Optional<ProbeLock> tryTake(NetnsThread thread) {
    return tryBind(thread).map(fd -> new ProbeLock(fd, Duration.ZERO));
  }

  private static Optional<Integer> tryBind(NetnsThread thread) {
    return thread.call(() -> {
      int fd;
      try {
        fd = C.socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      } catch (LastErrorException e) {
        throw new IllegalStateException("cannot make the kernel probe's lock socket: errno " + e.getErrorCode(), e);
      }
      try {
        byte[] address = address();
        C.bind(fd, address, address.length);
        return Optional.of(fd);
      } catch (LastErrorException e) {
        C.close(fd);
        if (e.getErrorCode() == EADDRINUSE) {
          return Optional.empty();
        }
        throw new IllegalStateException("cannot bind the kernel probe's lock @" + NAME + ": errno "
            + e.getErrorCode(), e);
      }
    });
  }

  /** {@code struct sockaddr_un}: the family, then a NUL and the name, no terminator (an abstract address). */
  static byte[] address() {
    byte[] name = NAME.getBytes(StandardCharsets.US_ASCII);
    byte[] address = new byte[2 + 1 + name.length];
    // sa_family_t: an unsigned short in the host's byte order.
    if (ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN) {
      address[0] = AF_UNIX;
    } else {
      address[1] = AF_UNIX;
    }
    System.arraycopy(name, 0, address, 3, name.length);
    return address;
  }

  /** How long the taking waited for another holder: zero when nobody held it. */
  Duration waited() {
    return waited;
  }

  @Override
  public synchronized void close() {
    if (!closed) {
      closed = true;
      C.close(fd);
    }
  }
}
