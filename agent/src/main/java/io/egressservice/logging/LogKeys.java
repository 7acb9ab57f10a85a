package io.egressservice.logging;

import org.slf4j.spi.LoggingEventBuilder;

/**
 * The keys a log line carries, besides its message, when it concerns one EgressService or one node: SLF4J key-value
 * pairs, written by {@link JsonLineEncoder} as fields of the line's object and by {@link TextLineEncoder} as {@code
 * key=value} words after the message, so a log pipeline filters on them instead of parsing sentences.
 */
public final class LogKeys {
  /** The namespace of the EgressService (and its Service) the line is about. */
  public static final String NAMESPACE = "namespace";
  /** The name of the EgressService (and its Service) the line is about. */
  public static final String SERVICE = "service";
  /** The node the line is about: the one an agent runs on, or a host the allocator chose, probed or drained. */
  public static final String NODE = "node";

  private LogKeys() {}

  /** {@code line} with the namespace and name of the service it is about. */
  public static LoggingEventBuilder service(LoggingEventBuilder line, String namespace, String name) {
    return line.addKeyValue(NAMESPACE, namespace).addKeyValue(SERVICE, name);
  }
}
