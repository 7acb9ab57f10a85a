package io.egressservice.logging;

import com.sun.jna.Callback;
import com.sun.jna.Library;
import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import com.sun.jna.Structure;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns what native libraries print on the C {@code stderr} stream into log events. libnftables
 * keeps its messages in the context's buffers (NftClient asks for that), except a few it prints
 * straight to {@code stderr}, such as "Operation not permitted (you must be root)"; in the JSON log
 * format such a raw line broke the one-object-a-line stream, and in text it had no time or level.
 *
 * <p>C's {@code stderr} (the {@code FILE *} that every library in the process shares) is pointed at
 * a stream of our own ({@code fopencookie}) whose write function logs each line, on the thread that
 * wrote it, before the native call returns: the event is in order with the rest and is not lost when
 * the process exits right after. The JVM and Java's {@code System.err} write file descriptor 2
 * directly, not through {@code stderr}, so log output does not come back here.
 */
public final class NativeStderr {
  private static final Logger LOG = LoggerFactory.getLogger(NativeStderr.class);

  private final Writer writer;
  private final Pointer stream;

  private NativeStderr(Writer writer, Pointer stream) {
    this.writer = writer;
    this.stream = stream;
  }

  /**
   * Redirects C's {@code stderr} for the rest of the process's life; returns the capture, which the
   * caller keeps reachable (its callback must not be collected while native code may write).
   *
   * @throws IllegalStateException when the C library does not allow it (not glibc, no JNA)
   */
  public static NativeStderr install() {
    try {
      Writer writer = new Writer();
      CookieFunctions.ByValue functions = new CookieFunctions.ByValue();
      functions.write = writer;
      LibC libc = Native.load("c", LibC.class);
      Pointer stream = libc.fopencookie(null, "w", functions);
      if (stream == null) {
        throw new IllegalStateException("fopencookie failed (errno " + Native.getLastError() + ")");
      }
      libc.setvbuf(stream, null, IOLBF, 0);
      // The process-wide lookup (RTLD_DEFAULT) finds the very variable every library binds to.
      Pointer variable = NativeLibrary.getProcess().getGlobalVariableAddress("stderr");
      libc.fflush(variable.getPointer(0));
      variable.setPointer(0, stream);
      return new NativeStderr(writer, stream);
    } catch (UnsatisfiedLinkError | RuntimeException e) {
      throw new IllegalStateException("cannot capture the C stderr stream: " + e.getMessage(), e);
    }
  }

  @Override
  public String toString() {
    return "NativeStderr[" + stream + "]";
  }

  private static final int IOLBF = 1;

  interface LibC extends Library {
    Pointer fopencookie(Pointer cookie, String mode, CookieFunctions.ByValue functions);

    int setvbuf(Pointer stream, Pointer buffer, int mode, long size);

    int fflush(Pointer stream);
  }

  /** {@code cookie_io_functions_t}: only {@code write}; the others stay NULL (reads fail, seeks fail). */
  @Structure.FieldOrder({"read", "write", "seek", "close"})
  public static class CookieFunctions extends Structure {
    public Pointer read;
    public WriteFunction write;
    public Pointer seek;
    public Pointer close;

    public static final class ByValue extends CookieFunctions implements Structure.ByValue {}
  }

  /** {@code ssize_t write(void *cookie, const char *buf, size_t size)}. */
  public interface WriteFunction extends Callback {
    long invoke(Pointer cookie, Pointer buffer, long size);
  }

  /** Collects bytes into lines; each complete line is one WARN event. */
  static final class Writer implements WriteFunction {
    private final ByteArrayOutputStream pending = new ByteArrayOutputStream();

    @Override
    public synchronized long invoke(Pointer cookie, Pointer buffer, long size) {
      try {
        byte[] bytes = buffer.getByteArray(0, (int) size);
        for (byte b : bytes) {
          if (b == '\n') {
            emit();
          } else {
            pending.write(b);
          }
        }
        if (pending.size() > 8192) {
          emit(); // a very long line without an end: logged in pieces rather than held
        }
      } catch (RuntimeException | Error e) {
        // never throw into native code; the bytes are dropped
      }
      return size;
    }

    private void emit() {
      String line = pending.toString(StandardCharsets.UTF_8).strip();
      pending.reset();
      if (!line.isEmpty()) {
        LOG.warn("native library on stderr: {}", line);
      }
    }
  }
}
