package io.egressservice.health;

import com.sun.net.httpserver.HttpExchange;
import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.function.Supplier;

/**
 * One HTTP port for {@code /metrics} (Prometheus text), {@code /healthz} (the reconcile loop is alive)
 * and {@code /readyz} (informers synced and the first reconcile done).
 */
public final class HealthServer implements AutoCloseable {
  private final HTTPServer server;

  /** A probe answer: OK or not, with a one-line reason for the body. */
  public record Probe(boolean ok, String detail) {}

  private HealthServer(HTTPServer server) {
    this.server = server;
  }

  /** Starts on {@code port} (0 picks a free one). */
  public static HealthServer start(int port, PrometheusRegistry registry, Supplier<Probe> liveness,
      Supplier<Probe> readiness) throws IOException {
    HTTPServer server = HTTPServer.builder()
        .port(port)
        .registry(registry)
        .metricsHandlerPath("/metrics")
        .defaultHandler(exchange -> {
          String path = exchange.getRequestURI().getPath();
          switch (path) {
            case "/healthz" -> respond(exchange, liveness.get());
            case "/readyz" -> respond(exchange, readiness.get());
            default -> respond(exchange, 404, "not found: try /metrics, /healthz or /readyz\n");
          }
        })
        .buildAndStart();
    return new HealthServer(server);
  }

  public int port() {
    return server.getPort();
  }

  private static void respond(HttpExchange exchange, Probe probe) throws IOException {
    respond(exchange, probe.ok() ? 200 : 503, (probe.ok() ? "ok" : "not ok") + ": " + probe.detail() + "\n");
  }

  private static void respond(HttpExchange exchange, int code, String body) throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("Content-Type", "text/plain; charset=utf-8");
    exchange.sendResponseHeaders(code, bytes.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(bytes);
    }
  }

  @Override
  public void close() {
    server.close();
  }
}
