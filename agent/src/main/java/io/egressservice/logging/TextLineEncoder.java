package io.egressservice.logging;

import ch.qos.logback.classic.PatternLayout;
import ch.qos.logback.classic.pattern.MessageConverter;
import ch.qos.logback.classic.pattern.ThrowableProxyConverter;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.IThrowableProxy;
import ch.qos.logback.classic.spi.StackTraceElementProxy;
import ch.qos.logback.core.pattern.PatternLayoutEncoderBase;
import io.egressservice.text.Printable;
import io.egressservice.text.ShellWords;
import java.util.Arrays;
import java.util.List;
import org.slf4j.event.KeyValuePair;

/**
 * The text log format: logback's pattern layout, except that the message and an exception's messages are {@linkplain
 * Printable#escape escaped}. A log line quotes names, networks, Event messages and API errors that others wrote: a
 * newline in one of them would start a forged line (a fake "ERROR" of another logger), an ANSI escape would hide or
 * recolour what follows on the terminal of whoever reads the log. Each event is then the one line (and its stack
 * trace's lines) the pattern says. (The JSON format, {@link JsonLineEncoder}, escapes inside its strings.) The
 * event's key-value pairs ({@link LogKeys}) follow the message as {@code key=value} words, each value one
 * {@linkplain ShellWords#visibleWord visible word}.
 */
public final class TextLineEncoder extends PatternLayoutEncoderBase<ILoggingEvent> {
  @Override
  public void start() {
    PatternLayout layout = new PatternLayout();
    for (String word : new String[] {"m", "msg", "message"}) {
      layout.getInstanceConverterMap().put(word, EscapedMessage::new);
    }
    for (String word : new String[] {"ex", "exception", "throwable"}) {
      layout.getInstanceConverterMap().put(word, EscapedThrowable::new);
    }
    layout.setContext(context);
    layout.setPattern(getPattern());
    layout.setOutputPatternAsHeader(outputPatternAsHeader);
    layout.start();
    this.layout = layout;
    super.start();
  }

  /** {@code %msg}: the formatted message, escaped, then the event's key-value pairs. */
  public static final class EscapedMessage extends MessageConverter {
    @Override
    public String convert(ILoggingEvent event) {
      String message = Printable.escape(event.getFormattedMessage());
      List<KeyValuePair> pairs = event.getKeyValuePairs();
      if (pairs == null || pairs.isEmpty()) {
        return message;
      }
      StringBuilder sb = new StringBuilder(message);
      for (KeyValuePair kv : pairs) {
        sb.append(' ').append(ShellWords.visibleWord(String.valueOf(kv.key))).append('=')
            .append(ShellWords.visibleWord(String.valueOf(kv.value)));
      }
      return sb.toString();
    }
  }

  /** {@code %ex}: the stack trace, each exception's message escaped (its frames are the JVM's own text). */
  public static final class EscapedThrowable extends ThrowableProxyConverter {
    @Override
    protected String throwableProxyToString(IThrowableProxy tp) {
      return super.throwableProxyToString(new EscapedProxy(tp));
    }
  }

  /** An exception as logback sees it, with its messages (and its causes' and suppressed ones') escaped. */
  private record EscapedProxy(IThrowableProxy raw) implements IThrowableProxy {
    private static IThrowableProxy of(IThrowableProxy tp) {
      return tp == null ? null : new EscapedProxy(tp);
    }

    @Override
    public String getOverridingMessage() {
      String m = raw.getOverridingMessage();
      return m == null ? null : Printable.escape(m);
    }

    @Override
    public String getMessage() {
      String m = raw.getMessage();
      return m == null ? null : Printable.escape(m);
    }

    @Override
    public String getClassName() {
      return raw.getClassName();
    }

    @Override
    public StackTraceElementProxy[] getStackTraceElementProxyArray() {
      return raw.getStackTraceElementProxyArray();
    }

    @Override
    public int getCommonFrames() {
      return raw.getCommonFrames();
    }

    @Override
    public IThrowableProxy getCause() {
      return of(raw.getCause());
    }

    @Override
    public IThrowableProxy[] getSuppressed() {
      IThrowableProxy[] suppressed = raw.getSuppressed();
      return suppressed == null ? null : Arrays.stream(suppressed).map(EscapedProxy::of).toArray(IThrowableProxy[]::new);
    }

    @Override
    public boolean isCyclic() {
      return raw.isCyclic();
    }
  }
}
