package io.egressservice.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * A throwaway network namespace for tests, removed on close. Commands run in it through
 * {@code ip netns exec}, so iproute2 and nft act as the independent oracle for our encoding.
 */
public final class Netns implements AutoCloseable {
  private static final ObjectMapper JSON = new ObjectMapper();
  private final String name;

  private Netns(String name) {
    this.name = name;
  }

  /** Creates {@code esa-<prefix>-<random>} with loopback up. Call {@link Privileges#assumeNetAdmin()} first. */
  public static Netns create(String prefix) {
    String name = "esa-" + prefix + "-" + Integer.toHexString(ThreadLocalRandom.current().nextInt(1 << 24));
    run(List.of("ip", "netns", "add", name));
    Netns ns = new Netns(name);
    ns.exec("ip", "link", "set", "lo", "up");
    return ns;
  }

  public String name() {
    return name;
  }

  /** Runs a command inside the namespace; fails the test on a non-zero exit. Returns stdout. */
  public String exec(String... command) {
    List<String> full = new ArrayList<>(List.of("ip", "netns", "exec", name));
    full.addAll(List.of(command));
    return run(full);
  }

  /** Runs a command inside the namespace and returns its exit code, stdout and stderr, never failing. */
  public Result tryExec(String... command) {
    List<String> full = new ArrayList<>(List.of("ip", "netns", "exec", name));
    full.addAll(List.of(command));
    return runForResult(full, null);
  }

  /** Runs a command inside the namespace with {@code stdin} as its input; fails on a non-zero exit. */
  public String execWithInput(String stdin, String... command) {
    List<String> full = new ArrayList<>(List.of("ip", "netns", "exec", name));
    full.addAll(List.of(command));
    Result r = runForResult(full, stdin);
    if (r.exitCode() != 0) {
      throw new IllegalStateException(String.join(" ", full) + " failed (" + r.exitCode() + "): " + r.stderr());
    }
    return r.stdout();
  }

  /** Runs a command whose output is JSON (e.g. {@code ip -j rule show}) and parses it; empty output is []. */
  public JsonNode json(String... command) {
    String out = exec(command).trim();
    try {
      return JSON.readTree(out.isEmpty() ? "[]" : out);
    } catch (IOException e) {
      throw new IllegalStateException("not JSON from " + String.join(" ", command) + ": " + out, e);
    }
  }

  @Override
  public void close() {
    runForResult(List.of("ip", "netns", "del", name), null);
  }

  /** Runs a command in the test's own namespace; fails on a non-zero exit; returns stdout. */
  public static String run(List<String> command) {
    Result r = runForResult(command, null);
    if (r.exitCode() != 0) {
      throw new IllegalStateException(String.join(" ", command) + " failed (" + r.exitCode() + "): " + r.stderr());
    }
    return r.stdout();
  }

  public static Result runForResult(List<String> command, String stdin) {
    try {
      ProcessBuilder pb = new ProcessBuilder(command);
      Process p = pb.start();
      if (stdin != null) {
        p.getOutputStream().write(stdin.getBytes(StandardCharsets.UTF_8));
      }
      p.getOutputStream().close();
      // Read both streams fully before waiting, so a chatty command cannot block on a full pipe.
      var errFuture = java.util.concurrent.CompletableFuture.supplyAsync(() -> readAll(p.getErrorStream()));
      String out = readAll(p.getInputStream());
      if (!p.waitFor(60, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IllegalStateException(String.join(" ", command) + " did not finish in 60 s");
      }
      return new Result(p.exitValue(), out, errFuture.join());
    } catch (IOException e) {
      throw new IllegalStateException("cannot run " + String.join(" ", command) + ": " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted running " + String.join(" ", command), e);
    }
  }

  private static String readAll(java.io.InputStream in) {
    try {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      return "";
    }
  }

  /** A finished command. */
  public record Result(int exitCode, String stdout, String stderr) {}
}
