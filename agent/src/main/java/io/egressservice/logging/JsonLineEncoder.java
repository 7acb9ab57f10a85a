package io.egressservice.logging;

import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.IThrowableProxy;
import ch.qos.logback.classic.spi.ThrowableProxyUtil;
import ch.qos.logback.core.encoder.EncoderBase;
import io.egressservice.text.Printable;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.slf4j.event.KeyValuePair;

/**
 * One JSON object per log event, one per line: {@code time} (RFC 3339, UTC, milliseconds),
 * {@code level}, {@code loggerName}, {@code threadName}, {@code message} (formatted: the arguments
 * filled in), the event's key-value pairs as fields of their own ({@link LogKeys}: {@code namespace}, {@code service},
 * {@code node}; a key that would repeat one of the fields above is left out), then {@code mdc} and {@code throwable}
 * (the stack trace as text) when there are any.
 *
 * <p>Instead of logback's {@code JsonEncoder}, which writes the unformatted template with an
 * {@code arguments} array and the time as epoch milliseconds: a log pipeline wants the sentence a
 * human reads and a time it can parse without knowing the field is in milliseconds. The field names
 * it shares with that encoder ({@code level}, {@code loggerName}, {@code threadName}) are kept.
 */
public final class JsonLineEncoder extends EncoderBase<ILoggingEvent> {
  private static final DateTimeFormatter RFC_3339 =
      DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSXXX").withZone(ZoneOffset.UTC);
  private static final byte[] NOTHING = new byte[0];
  private static final Set<String> FIELDS =
      Set.of("time", "level", "loggerName", "threadName", "message", "mdc", "throwable");

  @Override
  public byte[] headerBytes() {
    return NOTHING;
  }

  @Override
  public byte[] footerBytes() {
    return NOTHING;
  }

  @Override
  public byte[] encode(ILoggingEvent event) {
    StringBuilder sb = new StringBuilder(256);
    sb.append("{\"time\":");
    string(sb, RFC_3339.format(Instant.ofEpochMilli(event.getTimeStamp())));
    sb.append(",\"level\":");
    string(sb, event.getLevel().toString());
    sb.append(",\"loggerName\":");
    string(sb, event.getLoggerName());
    sb.append(",\"threadName\":");
    string(sb, event.getThreadName());
    sb.append(",\"message\":");
    string(sb, event.getFormattedMessage());
    List<KeyValuePair> pairs = event.getKeyValuePairs();
    if (pairs != null) {
      for (KeyValuePair kv : pairs) {
        if (kv.key != null && !FIELDS.contains(kv.key)) {
          sb.append(',');
          string(sb, kv.key);
          sb.append(':');
          string(sb, kv.value == null ? null : String.valueOf(kv.value));
        }
      }
    }
    Map<String, String> mdc = event.getMDCPropertyMap();
    if (mdc != null && !mdc.isEmpty()) {
      sb.append(",\"mdc\":{");
      boolean first = true;
      for (Map.Entry<String, String> e : mdc.entrySet()) {
        if (!first) {
          sb.append(',');
        }
        first = false;
        string(sb, e.getKey());
        sb.append(':');
        string(sb, e.getValue());
      }
      sb.append('}');
    }
    IThrowableProxy thrown = event.getThrowableProxy();
    if (thrown != null) {
      sb.append(",\"throwable\":");
      string(sb, ThrowableProxyUtil.asString(thrown));
    }
    sb.append("}\n");
    return sb.toString().getBytes(StandardCharsets.UTF_8);
  }

  /**
   * Appends {@code s} as a JSON string (RFC 8259 escapes; {@code null} as JSON null), with DEL, the C1 controls, the
   * line separators and bidirectional overrides as {@code \}{@code uHHHH} too: the same string to a parser, nothing a
   * terminal acts on when a person reads the line.
   */
  static void string(StringBuilder sb, String s) {
    if (s == null) {
      sb.append("null");
      return;
    }
    sb.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> sb.append("\\\"");
        case '\\' -> sb.append("\\\\");
        case '\n' -> sb.append("\\n");
        case '\r' -> sb.append("\\r");
        case '\t' -> sb.append("\\t");
        default -> {
          // JSON's own (every C0 control), and what Printable escapes for a terminal: DEL, C1, bidi overrides
          if (c < 0x20 || (Printable.escapes(c) && !Character.isSurrogate(c))) {
            sb.append(String.format("\\u%04x", (int) c));
          } else {
            sb.append(c);
          }
        }
      }
    }
    sb.append('"');
  }
}
