package io.egressservice.logging;

import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.IThrowableProxy;
import ch.qos.logback.classic.spi.ThrowableProxyUtil;
import ch.qos.logback.core.encoder.EncoderBase;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonFactoryBuilder;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.SerializableString;
import com.fasterxml.jackson.core.io.CharacterEscapes;
import com.fasterxml.jackson.core.io.SerializedString;
import io.egressservice.text.Printable;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
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
  private static final JsonFactory JSON = new JsonFactoryBuilder().characterEscapes(new TerminalSafeEscapes()).build();

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
    // Characters, not bytes: Jackson's byte writer would escape every surrogate pair; this way an emoji in a
    // message stays itself, as UTF-8.
    StringWriter line = new StringWriter(256);
    try (JsonGenerator json = JSON.createGenerator(line)) {
      json.writeStartObject();
      json.writeStringField("time", RFC_3339.format(Instant.ofEpochMilli(event.getTimeStamp())));
      json.writeStringField("level", event.getLevel().toString());
      json.writeStringField("loggerName", event.getLoggerName());
      json.writeStringField("threadName", event.getThreadName());
      json.writeStringField("message", event.getFormattedMessage());
      List<KeyValuePair> pairs = event.getKeyValuePairs();
      if (pairs != null) {
        for (KeyValuePair kv : pairs) {
          if (kv.key != null && !FIELDS.contains(kv.key)) {
            json.writeStringField(kv.key, kv.value == null ? null : String.valueOf(kv.value));
          }
        }
      }
      Map<String, String> mdc = event.getMDCPropertyMap();
      if (mdc != null && !mdc.isEmpty()) {
        json.writeObjectFieldStart("mdc");
        for (Map.Entry<String, String> e : mdc.entrySet()) {
          json.writeStringField(e.getKey(), e.getValue());
        }
        json.writeEndObject();
      }
      IThrowableProxy thrown = event.getThrowableProxy();
      if (thrown != null) {
        json.writeStringField("throwable", ThrowableProxyUtil.asString(thrown));
      }
      json.writeEndObject();
    } catch (IOException e) {
      throw new UncheckedIOException("a StringWriter does not fail", e);
    }
    return line.append('\n').toString().getBytes(StandardCharsets.UTF_8);
  }

  /**
   * RFC 8259's escapes, with DEL, the C1 controls, the line separators and bidirectional overrides (what {@link
   * Printable} escapes for a terminal) as {@code \}{@code uhhhh} too: the same string to a parser, nothing a terminal
   * acts on when a person reads the line. Every C0 control but newline, return and tab is {@code \}{@code u00hh}
   * (not {@code \b}, {@code \f}), lower-case, as the format always wrote them.
   */
  private static final class TerminalSafeEscapes extends CharacterEscapes {
    private final int[] ascii = standardAsciiEscapesForJSON();

    TerminalSafeEscapes() {
      for (char c = 0; c < ascii.length; c++) {
        if ((c < 0x20 && c != '\n' && c != '\r' && c != '\t') || c == 0x7f) {
          ascii[c] = ESCAPE_CUSTOM;
        }
      }
    }

    @Override
    public int[] getEscapeCodesForAscii() {
      return ascii;
    }

    @Override
    public SerializableString getEscapeSequence(int c) {
      boolean escaped = c < 0x20 || (c <= Character.MAX_VALUE && Printable.escapes((char) c)
          && !Character.isSurrogate((char) c));
      return escaped ? new SerializedString(String.format("\\u%04x", c)) : null;
    }
  }
}
