package io.egressservice.lifecycle;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Where {@link FailFast} writes why it ends the process, and the failures it lets pass. */
public interface FatalLog {
  /** The one line before the process ends; {@code cause} may be absent (a thread that simply ended). */
  void fatal(String line, Throwable cause);

  /** A non-essential thread died of an exception: it is gone, the process goes on. */
  void threadDied(String line, Throwable cause);

  /** Through SLF4J (the process's log format). */
  static FatalLog slf4j() {
    Logger log = LoggerFactory.getLogger(FailFast.class);
    return new FatalLog() {
      @Override
      public void fatal(String line, Throwable cause) {
        // No stack trace for an OutOfMemoryError: printing it allocates, and where it was thrown says little
        // about what filled the heap.
        if (cause == null || cause instanceof OutOfMemoryError) {
          log.error(line);
        } else {
          log.error(line, cause);
        }
      }

      @Override
      public void threadDied(String line, Throwable cause) {
        log.warn(line, cause);
      }
    };
  }
}
