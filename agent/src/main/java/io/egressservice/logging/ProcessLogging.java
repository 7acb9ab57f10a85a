package io.egressservice.logging;

import java.io.PrintWriter;
import java.io.Writer;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.bridge.SLF4JBridgeHandler;

/**
 * The logging set-up of the real process (not of tests that run commands in-process): every source
 * of lines on stderr goes through SLF4J, so the chosen format holds for all of them. System.Logger
 * is routed by slf4j-jdk-platform-logging (a {@code System.LoggerFinder} service the JDK finds on the
 * class path, also in tests); this adds java.util.logging (slf4j's {@link SLF4JBridgeHandler} in place
 * of the console handler, so no library prints its two-line format) and the C {@code stderr} stream of
 * native libraries ({@link NativeStderr}), and, in the JSON format, the command line's own messages.
 */
public final class ProcessLogging {
  private final LogConfigurator.Format format;
  private volatile Optional<NativeStderr> nativeStderr = Optional.empty();

  private ProcessLogging(LogConfigurator.Format format) {
    this.format = format;
  }

  /** Installs the java.util.logging bridge for the rest of the process's life; keep the result reachable until exit. */
  public static ProcessLogging install() {
    SLF4JBridgeHandler.removeHandlersForRootLogger();
    SLF4JBridgeHandler.install();
    return new ProcessLogging(LogConfigurator.settings(LogConfigurator::systemPropertyThenEnvironment).format());
  }

  /**
   * Also captures C's {@code stderr} ({@link NativeStderr}), for the commands that load libnftables
   * (not for {@code plan}, which would only pay for loading JNA). Where that is not possible the
   * stream stays as it is, which only costs the format of a rare line.
   */
  public synchronized void captureNativeStderr() {
    if (nativeStderr.isPresent()) {
      return;
    }
    try {
      nativeStderr = Optional.of(NativeStderr.install());
    } catch (IllegalStateException e) {
      LoggerFactory.getLogger(ProcessLogging.class).debug("native stderr stays as it is: {}", e.getMessage());
    }
  }

  /**
   * Where the command line writes its messages: {@code err} in the text format; in JSON one log
   * event per line (ERROR for "error: ..." lines, WARN for the rest: notes, warnings, usage hints),
   * so stderr holds nothing but JSON objects.
   */
  public PrintWriter commandLineErr(PrintWriter err) {
    if (format != LogConfigurator.Format.JSON) {
      return err;
    }
    return new PrintWriter(new LineLogger(), true);
  }

  @Override
  public String toString() {
    return "ProcessLogging[" + format + ", native stderr " + (nativeStderr.isPresent() ? "captured" : "as is") + "]";
  }

  /** Each line written becomes one log event. */
  private static final class LineLogger extends Writer {
    private final Logger log = LoggerFactory.getLogger("io.egressservice.cli.Main");
    private final StringBuilder line = new StringBuilder();

    @Override
    public synchronized void write(char[] buf, int off, int len) {
      for (int i = off; i < off + len; i++) {
        char c = buf[i];
        if (c == '\n') {
          emit();
        } else if (c != '\r') {
          line.append(c);
        }
      }
    }

    private void emit() {
      String text = line.toString();
      line.setLength(0);
      if (text.isBlank()) {
        return;
      }
      if (text.startsWith("error") || text.startsWith("internal error")) {
        log.error(text);
      } else {
        log.warn(text);
      }
    }

    @Override
    public synchronized void flush() {
      // lines are logged as they end; a partial line waits for its end (or close)
    }

    @Override
    public synchronized void close() {
      emit();
    }
  }
}
