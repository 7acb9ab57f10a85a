package io.egressservice.testbed;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * The AppCDS archive of the agent's classes for the agent processes the tests start, dumped from the image's class
 * list ({@code agent/src/main/appcds/agent.classlist}) as the image does, once per build: each agent then boots with
 * about a third less CPU, which adds up over the suite's hundred-odd agent starts on two cores. Only where the build
 * asks for it ({@code -Dtestbed.agentCds=<directory>}, the testbed's surefire configuration); the demo and the
 * benches run without it.
 *
 * <p>The JVM archives classes from jars only, so the agent's class path lists this JVM's jars first, in order, and
 * its directories after them (the archive's class path is then a prefix of the agent's). The archive's name is a
 * digest of those jars (path, size, modification time): a rebuilt jar gets a new archive. An archive the JVM finds
 * stale or cannot map it ignores ({@code -Xshare:auto}, the default), and a dump that fails leaves no archive: an
 * agent can start slower, never differently.
 */
public final class AgentCds {
  /** The system property naming the directory of the archives. */
  public static final String DIRECTORY_PROPERTY = "testbed.agentCds";
  static final Path CLASS_LIST = Path.of("agent", "src", "main", "appcds", "agent.classlist");
  private static final long DUMP_LIMIT_SECONDS = 180;

  private AgentCds() {}

  /** The agent's class path: this JVM's class path (absolute), its jars first. */
  static String agentClassPath() {
    return String.join(File.pathSeparator, jarsThenDirectories());
  }

  /** The agent's JVM options for the archive, dumped first if missing: none unless the build asks for one. */
  static List<String> jvmOptions() {
    String dir = System.getProperty(DIRECTORY_PROPERTY, "");
    if (dir.isBlank() || !Files.isRegularFile(CLASS_LIST)) {
      return List.of();
    }
    List<String> jars = jarsThenDirectories().stream().filter(e -> Files.isRegularFile(Path.of(e))).toList();
    Path archive = Path.of(dir).toAbsolutePath().resolve("agent-" + digest(jars) + ".jsa");
    return dumped(archive, jars)
        .map(a -> List.of("-XX:SharedArchiveFile=" + a, "-Xlog:cds=off", "-Xlog:cds+dynamic=off"))
        .orElse(List.of());
  }

  /**
   * One dump per archive name and JVM at a time; an earlier JVM's archive is reused, and a dump that failed (a JVM
   * without CDS) is not tried again: it leaves {@code <archive>.failed} behind.
   */
  private static synchronized Optional<Path> dumped(Path archive, List<String> jars) {
    if (Files.isRegularFile(archive)) {
      return Optional.of(archive);
    }
    Path failed = archive.resolveSibling(archive.getFileName() + ".failed");
    if (Files.exists(failed)) {
      return Optional.empty();
    }
    Optional<Path> made = dump(archive, jars);
    if (made.isEmpty()) {
      try {
        Files.writeString(failed, "java -Xshare:dump from " + CLASS_LIST + " failed: the agents start without it\n");
      } catch (IOException e) {
        // then the next start tries again
      }
    }
    return made;
  }

  private static Optional<Path> dump(Path archive, List<String> jars) {
    Path partial = archive.resolveSibling(archive.getFileName() + "." + ProcessHandle.current().pid() + ".partial");
    try {
      Files.createDirectories(archive.getParent());
      Process dump = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
          "-Xshare:dump", "-Xlog:cds=error", "-XX:SharedClassListFile=" + CLASS_LIST.toAbsolutePath(),
          "-XX:SharedArchiveFile=" + partial, "-cp", String.join(File.pathSeparator, jars))
          .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
      if (!dump.waitFor(DUMP_LIMIT_SECONDS, TimeUnit.SECONDS)) {
        dump.destroyForcibly();
        dump.waitFor(10, TimeUnit.SECONDS);
      }
      if (dump.isAlive() || dump.exitValue() != 0 || !Files.isRegularFile(partial)) {
        return Optional.empty();
      }
      Files.move(partial, archive, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      return Optional.of(archive);
    } catch (IOException e) {
      return Optional.empty();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Optional.empty();
    } finally {
      try {
        Files.deleteIfExists(partial);
      } catch (IOException e) {
        // a leftover partial archive is never mapped: its name is not an archive's
      }
    }
  }

  private static List<String> jarsThenDirectories() {
    List<String> jars = new ArrayList<>();
    List<String> directories = new ArrayList<>();
    for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
      if (!e.isEmpty()) {
        Path p = Path.of(e).toAbsolutePath();
        (Files.isDirectory(p) ? directories : jars).add(p.toString());
      }
    }
    jars.addAll(directories);
    return jars;
  }

  private static String digest(List<String> jars) {
    try {
      MessageDigest sha = MessageDigest.getInstance("SHA-256");
      for (String jar : jars) {
        Path p = Path.of(jar);
        sha.update((jar + "|" + Files.size(p) + "|" + Files.getLastModifiedTime(p).toMillis() + "\n")
            .getBytes(StandardCharsets.UTF_8));
      }
      sha.update(Files.readAllBytes(CLASS_LIST));
      return HexFormat.of().formatHex(sha.digest(), 0, 8);
    } catch (NoSuchAlgorithmException | IOException e) {
      throw new IllegalStateException("cannot digest the agent's class path: " + e.getMessage(), e);
    }
  }
}
