package io.egressservice.testbed;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * One network namespace of a {@link Cluster} ({@code /run/netns/<name>}), and the commands that build and
 * inspect it: iproute2 ({@code ip -batch}), nft and /proc/sys, each run through {@code ip netns exec} and
 * bounded in time. Deleting it takes its interfaces (and their veth peers) with it.
 */
public final class Namespace {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final long COMMAND_TIMEOUT_SECONDS = 30;

  private final String name;
  private final String role;

  Namespace(String name, String role) {
    this.name = name;
    this.role = role;
  }

  /** The kernel's name of the namespace (what {@code --netns} and {@code ip netns exec} take). */
  public String name() {
    return name;
  }

  /** The role in the cluster: {@code node-a}, {@code pod-b1}, {@code ext-a2}, {@code lan}, {@code client}. */
  public String role() {
    return role;
  }

  /** Runs a command in the namespace; a non-zero exit throws with its stderr. Returns stdout. */
  public String exec(String... command) {
    Result r = tryExec(command);
    if (r.exitCode() != 0) {
      throw new IllegalStateException(role + ": " + String.join(" ", command) + " failed (" + r.exitCode() + "): "
          + r.stderr().trim());
    }
    return r.stdout();
  }

  /** Runs a command in the namespace and returns what happened, never throwing on a non-zero exit. */
  public Result tryExec(String... command) {
    return run(inside(command), null);
  }

  /** Runs a command with {@code stdin} as its input; a non-zero exit throws. */
  public String execWithInput(String stdin, String... command) {
    Result r = run(inside(command), stdin);
    if (r.exitCode() != 0) {
      throw new IllegalStateException(role + ": " + String.join(" ", command) + " failed (" + r.exitCode() + "): "
          + r.stderr().trim());
    }
    return r.stdout();
  }

  /** {@code ip -n <name> -batch -}: one iproute2 command per line, in one process. */
  public void ip(String... lines) {
    Result r = run(List.of("ip", "-n", name, "-batch", "-"), String.join("\n", lines) + "\n");
    if (r.exitCode() != 0) {
      throw new IllegalStateException(role + ": ip -batch failed (" + r.exitCode() + "): " + r.stderr().trim());
    }
  }

  /** {@code nft -f -} with {@code script}. */
  public void nft(String script) {
    execWithInput(script, "nft", "-f", "-");
  }

  /** {@code key=value} written to /proc/sys (no dependency on procps' sysctl). */
  public void sysctl(String... settings) {
    StringBuilder script = new StringBuilder("set -e\n");
    for (String kv : settings) {
      String[] p = kv.split("=", 2);
      script.append("echo ").append(p[1]).append(" > /proc/sys/").append(p[0].replace('.', '/')).append('\n');
    }
    execWithInput(script.toString(), "sh");
  }

  /** A command whose output is JSON ({@code ip -j ...}, {@code nft -j ...}); empty output is {@code []}. */
  public JsonNode json(String... command) {
    String out = exec(command).trim();
    try {
      return JSON.readTree(out.isEmpty() ? "[]" : out);
    } catch (IOException e) {
      throw new IllegalStateException(role + ": not JSON from " + String.join(" ", command) + ": " + out, e);
    }
  }

  @Override
  public String toString() {
    return role + " (" + name + ")";
  }

  private List<String> inside(String... command) {
    List<String> full = new ArrayList<>(List.of("ip", "netns", "exec", name));
    full.addAll(List.of(command));
    return full;
  }

  /** A finished command. */
  public record Result(int exitCode, String stdout, String stderr) {}

  /** Runs {@code command} in the caller's namespace; both streams read fully; at most 30 s. */
  static Result run(List<String> command, String stdin) {
    try {
      Process p = new ProcessBuilder(command).start();
      if (stdin != null) {
        p.getOutputStream().write(stdin.getBytes(StandardCharsets.UTF_8));
      }
      p.getOutputStream().close();
      CompletableFuture<String> err = CompletableFuture.supplyAsync(() -> readAll(p.getErrorStream()));
      String out = readAll(p.getInputStream());
      if (!p.waitFor(COMMAND_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IllegalStateException(String.join(" ", command) + " did not finish in " + COMMAND_TIMEOUT_SECONDS + " s");
      }
      return new Result(p.exitValue(), out, err.join());
    } catch (IOException e) {
      throw new IllegalStateException("cannot run " + String.join(" ", command) + ": " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted running " + String.join(" ", command), e);
    }
  }

  static String runOrThrow(List<String> command) {
    Result r = run(command, null);
    if (r.exitCode() != 0) {
      throw new IllegalStateException(String.join(" ", command) + " failed (" + r.exitCode() + "): " + r.stderr().trim());
    }
    return r.stdout();
  }

  private static String readAll(InputStream in) {
    try {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      return "";
    }
  }
}
