package io.egressservice.explain;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalDouble;

/**
 * Asks the running agent how old its view is: {@code GET /metrics} and {@code GET /readyz} on its metrics port (the
 * address and port the DaemonSet gives it), each bounded in time and size, so a hung or foreign listener costs
 * {@code status} a few seconds, never a stall. Read-only: nothing is sent but two GETs.
 */
public final class AgentViewReader {
  static final String WATCH_UP = "egress_service_agent_api_watch_up";
  static final String LAST_CONTACT = "egress_service_agent_api_last_contact_age_seconds";
  static final String WATCH_IDLE = "egress_service_agent_api_watch_idle_seconds";
  static final String FRESH_KERNEL_CHECK = "egress_service_agent_last_fresh_kernel_check_timestamp_seconds";
  static final String PENDING_TRIGGERS = "egress_service_agent_reconcile_pending_triggers";
  static final String PENDING_OLDEST = "egress_service_agent_reconcile_pending_oldest_seconds";
  /** An agent's metrics are some tens of KiB; more is not the agent. */
  private static final int MAX_BYTES = 4 << 20;
  private static final Duration TIMEOUT = Duration.ofSeconds(3);

  private final Clock clock;

  public AgentViewReader(Clock clock) {
    this.clock = clock;
  }

  /** The view from the agent whose metrics are at {@code metricsUrl} (an http URL ending in /metrics). */
  public AgentView read(URI metricsUrl) {
    String source = metricsUrl.toString();
    HttpClient http = HttpClient.newBuilder().connectTimeout(TIMEOUT).version(HttpClient.Version.HTTP_1_1)
        .followRedirects(HttpClient.Redirect.NEVER).build();
    Body metrics;
    try {
      metrics = get(http, metricsUrl);
    } catch (IOException e) {
      return new AgentView.Unknown(source, "no agent answered: " + describe(e));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return new AgentView.Unknown(source, "interrupted");
    }
    if (metrics.status() != 200) {
      return new AgentView.Unknown(source, "answered HTTP " + metrics.status() + ", not the agent's metrics");
    }
    List<MetricsText.Sample> samples = MetricsText.parse(metrics.text());
    if (samples.stream().noneMatch(s -> s.name().equals(WATCH_UP))) {
      return new AgentView.Unknown(source, "answered, but not with a node agent's metrics (no " + WATCH_UP + ")");
    }
    Body readyz;
    try {
      readyz = get(http, metricsUrl.resolve("/readyz"));
    } catch (IOException e) {
      readyz = new Body(0, "/readyz did not answer: " + describe(e));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return new AgentView.Unknown(source, "interrupted");
    }
    return view(source, samples, readyz);
  }

  private AgentView.Answered view(String source, List<MetricsText.Sample> samples, Body readyz) {
    Map<String, Boolean> up = new HashMap<>();
    Map<String, Double> contact = new HashMap<>();
    Map<String, Double> idle = new HashMap<>();
    OptionalDouble fresh = OptionalDouble.empty();
    long triggers = 0;
    double oldest = 0;
    double now = clock.millis() / 1000.0;
    for (MetricsText.Sample s : samples) {
      switch (s.name()) {
        case WATCH_UP -> up.put(s.labels().getOrDefault("kind", "?"), s.value() > 0);
        case LAST_CONTACT -> contact.put(s.labels().getOrDefault("kind", "?"), s.value());
        case WATCH_IDLE -> idle.put(s.labels().getOrDefault("resource", "?"), s.value());
        case FRESH_KERNEL_CHECK -> fresh = s.value() > 0 ? OptionalDouble.of(Math.max(0, now - s.value()))
            : OptionalDouble.empty();
        case PENDING_TRIGGERS -> triggers = (long) s.value();
        case PENDING_OLDEST -> oldest = s.value();
        default -> { }
      }
    }
    List<AgentView.Watch> watches = new ArrayList<>();
    new java.util.TreeMap<>(up).forEach((kind, isUp) -> watches.add(new AgentView.Watch(kind, isUp,
        contact.getOrDefault(kind, 0.0))));
    String readiness = readyz.text().strip();
    int newline = readiness.indexOf('\n');
    readiness = newline < 0 ? readiness : readiness.substring(0, newline);
    return new AgentView.Answered(source, readyz.status() == 200,
        readyz.status() == 0 || readyz.status() == 200 ? readiness : "HTTP " + readyz.status() + ": " + readiness,
        watches, idle, fresh, triggers, oldest);
  }

  private record Body(int status, String text) {}

  /** The whole GET (answer and body) within {@link #TIMEOUT}: a listener that trickles bytes is cut off too. */
  private static Body get(HttpClient http, URI uri) throws IOException, InterruptedException {
    java.util.concurrent.ExecutorService reader = java.util.concurrent.Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "agent-view-reader");
      t.setDaemon(true);
      return t;
    });
    java.util.concurrent.Future<Body> body = reader.submit(() -> {
      HttpResponse<InputStream> response = http.send(HttpRequest.newBuilder(uri).timeout(TIMEOUT).GET().build(),
          HttpResponse.BodyHandlers.ofInputStream());
      try (InputStream in = response.body()) {
        byte[] bytes = in.readNBytes(MAX_BYTES + 1);
        if (bytes.length > MAX_BYTES) {
          throw new IOException("more than " + MAX_BYTES + " bytes from " + uri);
        }
        return new Body(response.statusCode(), new String(bytes, StandardCharsets.UTF_8));
      }
    });
    try {
      return body.get(TIMEOUT.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.TimeoutException e) {
      throw new java.net.http.HttpTimeoutException("no whole answer within " + TIMEOUT.toSeconds() + " s");
    } catch (java.util.concurrent.ExecutionException e) {
      if (e.getCause() instanceof IOException io) {
        throw io;
      }
      if (e.getCause() instanceof InterruptedException) {
        throw new InterruptedException();
      }
      throw new IOException(String.valueOf(e.getCause()), e.getCause());
    } finally {
      reader.shutdownNow();
    }
  }

  private static String describe(IOException e) {
    String message = e.getMessage();
    return e.getClass().getSimpleName() + (message == null || message.isBlank() ? "" : ": " + message);
  }
}
