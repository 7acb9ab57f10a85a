package io.egressservice.netlink;

import com.sun.jna.LastErrorException;
import com.sun.jna.Library;
import com.sun.jna.Native;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * A dedicated platform thread that lives in one network namespace.
 *
 * <p>{@code setns(2)} changes the namespace of the calling thread only, so everything that must act in
 * a named namespace (a netlink socket, a libnftables context) is created and used on this thread.
 * With no name, the thread stays in the namespace of the process. Equivalent to {@code ip netns exec NAME}.
 */
public final class NetnsThread implements AutoCloseable {
  private static final int CLONE_NEWNET = 0x40000000;
  private static final int O_RDONLY = 0;
  private static final int O_CLOEXEC = 0x80000;
  private static final Path NETNS_RUN_DIR = Path.of("/run/netns");

  private interface LibC extends Library {
    LibC INSTANCE = Native.load("c", LibC.class);

    int open(String path, int flags) throws LastErrorException;

    int setns(int fd, int nstype) throws LastErrorException;

    int close(int fd) throws LastErrorException;
  }

  private final ExecutorService executor;
  private final Optional<String> netns;

  private NetnsThread(Optional<String> netns) {
    this.netns = netns;
    String threadName = "netns-" + netns.orElse("current");
    this.executor =
        Executors.newSingleThreadExecutor(
            r -> {
              Thread t = new Thread(r, threadName);
              t.setDaemon(true);
              return t;
            });
  }

  /** Starts a thread in the named namespace ({@code /run/netns/NAME}), or in the current one if empty. */
  public static NetnsThread enter(Optional<String> netns) {
    NetnsThread thread = new NetnsThread(netns);
    if (netns.isPresent()) {
      try {
        thread.call(
            () -> {
              thread.setns(netns.get());
              return null;
            });
      } catch (NetlinkException e) {
        thread.close();
        throw e;
      }
    }
    return thread;
  }

  private void setns(String name) {
    if (name.isEmpty() || name.contains("/") || name.equals(".") || name.equals("..")) {
      throw new NetlinkException.NoSuchNamespace("invalid network namespace name '" + name + "'");
    }
    Path path = NETNS_RUN_DIR.resolve(name);
    if (!Files.exists(path)) {
      throw new NetlinkException.NoSuchNamespace(
          "no such network namespace '" + name + "' (" + path + " does not exist; see 'ip netns list')");
    }
    int fd;
    try {
      fd = LibC.INSTANCE.open(path.toString(), O_RDONLY | O_CLOEXEC);
    } catch (LastErrorException e) {
      throw NetlinkException.fromErrno(e.getErrorCode(), "open " + path, describe());
    }
    try {
      LibC.INSTANCE.setns(fd, CLONE_NEWNET);
    } catch (LastErrorException e) {
      throw NetlinkException.fromErrno(
          e.getErrorCode(), "enter network namespace (setns, needs CAP_SYS_ADMIN)", describe());
    } finally {
      LibC.INSTANCE.close(fd);
    }
  }

  /** The namespace name, empty for the process's own namespace. */
  public Optional<String> netns() {
    return netns;
  }

  /** For messages: "netns NAME" or "the current network namespace". */
  public String describe() {
    return netns.map(n -> "netns " + n).orElse("the current network namespace");
  }

  /** Runs {@code task} on this namespace's thread and waits for it; its exceptions are rethrown as they are. */
  public <T> T call(Callable<T> task) {
    Future<T> future = executor.submit(task);
    try {
      return future.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      future.cancel(true);
      throw new IllegalStateException("interrupted while working in " + describe(), e);
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof RuntimeException re) {
        throw re;
      }
      if (cause instanceof Error err) {
        throw err;
      }
      throw new IllegalStateException(cause.getMessage(), cause);
    }
  }

  /**
   * Starts a long-running task (e.g. a notification loop) on this namespace's thread without
   * waiting for it. Calls made with {@link #call} afterwards queue behind it.
   */
  public Future<?> submit(Runnable task) {
    return executor.submit(task);
  }

  @Override
  public void close() {
    executor.shutdown();
    try {
      if (!executor.awaitTermination(5, TimeUnit.SECONDS)) {
        executor.shutdownNow();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      executor.shutdownNow();
    }
  }
}
