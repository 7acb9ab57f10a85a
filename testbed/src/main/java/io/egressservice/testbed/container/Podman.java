package io.egressservice.testbed.container;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The podman command line, run as root with a containers.conf of its own ({@code CONTAINERS_CONF}): runc, cgroupfs
 * and no default ulimits, since a machine whose root lacks CAP_SYS_RESOURCE (a CI container) cannot raise them and one
 * with hybrid cgroups has no systemd to manage them. A command meant for a node runs in its network namespace through
 * {@code nsenter --net=/run/netns/NAME}: {@code ip netns exec} would also remount /sys, where podman then finds no
 * cgroups. Every command is bounded in time.
 */
public final class Podman {
  /** The settings podman needs on this kind of machine (the file the tests pass as {@code CONTAINERS_CONF}). */
  static final String CONTAINERS_CONF = """
      [containers]
      default_ulimits = []
      [engine]
      cgroup_manager = "cgroupfs"
      runtime = "runc"
      events_logger = "file"
      """;

  /** A finished command. */
  public record Result(int exitCode, String stdout, String stderr) {
    String orThrow(List<String> command) {
      if (exitCode != 0) {
        throw new IllegalStateException(String.join(" ", command) + " failed (" + exitCode + "): " + stderr.trim()
            + (stdout.isBlank() ? "" : "\n" + stdout.trim()));
      }
      return stdout;
    }
  }

  private final Path conf;

  private Podman(Path conf) {
    this.conf = conf;
  }

  /**
   * Why container mode cannot run here (no root, no podman or runc, podman refusing to start), or empty when it can:
   * a test skips with this reason.
   */
  public static Optional<String> unavailable() {
    if (!"root".equals(System.getProperty("user.name"))) {
      return Optional.of("container mode needs root (podman, network namespaces)");
    }
    for (String tool : List.of("podman", "runc", "nsenter")) {
      if (!onPath(tool)) {
        return Optional.of(tool + " is not installed (scripts/setup.sh installs podman, runc and catatonit)");
      }
    }
    try {
      Podman p = create();
      Result info = p.tryRun(Optional.empty(), Duration.ofSeconds(60), List.of("info", "--format", "{{.Host.OCIRuntime.Name}}"));
      if (info.exitCode() != 0) {
        return Optional.of("podman info fails here: " + info.stderr().trim());
      }
    } catch (RuntimeException e) {
      return Optional.of("podman cannot run here: " + e.getMessage());
    }
    return Optional.empty();
  }

  /** A podman with the containers.conf this machine needs (written to a temporary file). */
  public static Podman create() {
    try {
      Path conf = Files.createTempFile("esa-containers-", ".conf");
      conf.toFile().deleteOnExit();
      Files.writeString(conf, CONTAINERS_CONF);
      return new Podman(conf);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** {@code podman ARGS} in the caller's namespace; a non-zero exit throws with podman's message. */
  public String run(Duration limit, String... args) {
    List<String> a = List.of(args);
    return tryRun(Optional.empty(), limit, a).orThrow(a);
  }

  /** {@code podman ARGS} in network namespace {@code netns} (its name under /run/netns); a non-zero exit throws. */
  public String runIn(String netns, Duration limit, String... args) {
    List<String> a = List.of(args);
    return tryRun(Optional.of(netns), limit, a).orThrow(a);
  }

  /** {@code podman ARGS}, never throwing on a non-zero exit. */
  public Result tryRun(Optional<String> netns, Duration limit, List<String> args) {
    List<String> command = new ArrayList<>();
    netns.ifPresent(n -> command.addAll(List.of("nsenter", "--net=/run/netns/" + n, "--")));
    command.add("podman");
    command.addAll(args);
    try {
      ProcessBuilder pb = new ProcessBuilder(command);
      pb.environment().put("CONTAINERS_CONF", conf.toString());
      Process p = pb.start();
      p.getOutputStream().close();
      CompletableFuture<String> err = CompletableFuture.supplyAsync(() -> readAll(p.getErrorStream()));
      CompletableFuture<String> out = CompletableFuture.supplyAsync(() -> readAll(p.getInputStream()));
      if (!p.waitFor(limit.toMillis(), TimeUnit.MILLISECONDS)) {
        p.destroyForcibly();
        throw new IllegalStateException(String.join(" ", command) + " did not finish in " + limit.toSeconds() + " s");
      }
      return new Result(p.exitValue(), out.join(), err.join());
    } catch (IOException e) {
      throw new IllegalStateException("cannot run " + String.join(" ", command) + ": " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted running " + String.join(" ", command), e);
    }
  }

  private static boolean onPath(String tool) {
    for (String dir : System.getenv().getOrDefault("PATH", "/usr/sbin:/usr/bin:/sbin:/bin").split(":")) {
      if (Files.isExecutable(Path.of(dir, tool))) {
        return true;
      }
    }
    return false;
  }

  private static String readAll(InputStream in) {
    try {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      return "";
    }
  }
}
