package io.egressservice.health;

import io.egressservice.health.ProbeHttpServer.Request;
import io.egressservice.health.ProbeHttpServer.Response;
import io.egressservice.health.ProbeHttpServer.Route;
import io.prometheus.metrics.exporter.common.PrometheusHttpExchange;
import io.prometheus.metrics.exporter.common.PrometheusHttpRequest;
import io.prometheus.metrics.exporter.common.PrometheusHttpResponse;
import io.prometheus.metrics.exporter.common.PrometheusScrapeHandler;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.Collections;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * One HTTP port for {@code /metrics} (Prometheus text), {@code /healthz} (the reconcile loop is alive)
 * and {@code /readyz} (informers synced and the first reconcile done). A node agent's port names whose health it
 * reports in headers of every answer ({@link ProbeIdentity}). The probes are answered whatever
 * other clients do: slow or idle connections, many of them, or a slow scrape ({@link ProbeHttpServer}).
 */
public final class HealthServer implements AutoCloseable {
  private final ProbeHttpServer server;

  /** A probe answer: OK or not, with a one-line reason for the body. */
  public record Probe(boolean ok, String detail) {}

  /** Paths served besides the three above (e.g. {@code /hosting}), added after the start. */
  private final Map<String, Route> added;

  private HealthServer(ProbeHttpServer server, Map<String, Route> added) {
    this.server = server;
    this.added = added;
  }

  /** Starts on {@code port} of every address (0 picks a free port), answering for no one in particular. */
  public static HealthServer start(int port, PrometheusRegistry registry, Supplier<Probe> liveness,
      Supplier<Probe> readiness) throws IOException {
    return start(new InetSocketAddress(port), registry, liveness, readiness);
  }

  /** Starts on {@code address} (its port 0 picks a free one), answering for no one in particular. */
  public static HealthServer start(InetSocketAddress address, PrometheusRegistry registry, Supplier<Probe> liveness,
      Supplier<Probe> readiness) throws IOException {
    return start(address, ProbeHttpServer.Limits.defaults(), registry, liveness, readiness);
  }

  /**
   * Starts on {@code address} (its port 0 picks a free one); every answer names {@code identity} (a node agent's
   * port, which the allocator probes: see {@link ProbeIdentity}).
   */
  public static HealthServer start(InetSocketAddress address, ProbeIdentity identity, PrometheusRegistry registry,
      Supplier<Probe> liveness, Supplier<Probe> readiness) throws IOException {
    return start(address, identity, ProbeKeys.none(), registry, liveness, readiness);
  }

  /**
   * As above, and a {@code GET /healthz} that carries a challenge ({@link ProbeProof#CHALLENGE_HEADER}, the
   * allocator's) is answered with a proof under {@code keys}' current key, when there is one. The kubelet's probes
   * carry none and get the plain answer.
   */
  public static HealthServer start(InetSocketAddress address, ProbeIdentity identity, ProbeKeys keys,
      PrometheusRegistry registry, Supplier<Probe> liveness, Supplier<Probe> readiness) throws IOException {
    return start(address, ProbeHttpServer.Limits.defaults(), Optional.of(identity), keys, registry, liveness,
        readiness);
  }

  static HealthServer start(InetSocketAddress address, ProbeHttpServer.Limits limits, PrometheusRegistry registry,
      Supplier<Probe> liveness, Supplier<Probe> readiness) throws IOException {
    return start(address, limits, Optional.empty(), ProbeKeys.none(), registry, liveness, readiness);
  }

  static HealthServer start(InetSocketAddress address, ProbeHttpServer.Limits limits,
      Optional<ProbeIdentity> identity, ProbeKeys keys, PrometheusRegistry registry, Supplier<Probe> liveness,
      Supplier<Probe> readiness) throws IOException {
    PrometheusScrapeHandler scrape = new PrometheusScrapeHandler(registry);
    Route metrics = new Route(true, request -> scrape(scrape, request));
    Route healthz = new Route(false, request -> proved(answer(liveness.get()), request, identity, keys));
    Route readyz = new Route(false, request -> answer(readiness.get()));
    Map<String, Route> added = new java.util.concurrent.ConcurrentHashMap<>();
    return new HealthServer(ProbeHttpServer.start(address, limits, path -> switch (path) {
      case "/metrics" -> metrics;
      case "/healthz" -> healthz;
      case "/readyz" -> readyz;
      default -> added.get(path);
    }, identity.map(ProbeIdentity::headers).orElse(Map.of())), added);
  }

  /**
   * Also answers {@code GET path} with the JSON {@code body} gives, on the probe port and as cheaply as a probe (on
   * the selector thread): read-only, and whoever reaches /healthz reaches it too.
   */
  public void serveJson(String path, Supplier<String> body) {
    added.put(path, new Route(false, request -> new Response(200,
        Map.of("Content-Type", "application/json"), body.get().getBytes(java.nio.charset.StandardCharsets.UTF_8))));
  }

  /**
   * The address of {@code --metrics-bind-address}: an IP literal (no name lookup: the agent may start
   * before DNS works), e.g. {@code 0.0.0.0}, {@code ::}, {@code 127.0.0.1} or the node's own address.
   */
  public static InetAddress bindAddress(String literal) {
    String s = literal.trim();
    if (s.startsWith("[") && s.endsWith("]")) {
      s = s.substring(1, s.length() - 1);
    }
    boolean v4 = s.matches("\\d{1,3}(\\.\\d{1,3}){3}");
    boolean v6 = s.contains(":") && s.matches("[0-9a-fA-F:.]+");
    if (!v4 && !v6) {
      throw new IllegalArgumentException("'" + literal + "' is not an IP address (e.g. 0.0.0.0, ::, 127.0.0.1)");
    }
    try {
      return InetAddress.getByName(s); // a literal: parsed, never looked up
    } catch (IOException e) {
      throw new IllegalArgumentException("'" + literal + "' is not an IP address: " + e.getMessage());
    }
  }

  public int port() {
    return server.port();
  }

  /**
   * Whether the thread that answers {@code /metrics}, {@code /healthz} and {@code /readyz} still runs: once it has
   * ended nothing answers the probes, which the process treats as fatal (an essential thread, see FailFast).
   */
  public boolean serving() {
    return server.serving();
  }

  private static Response answer(Probe probe) {
    return Response.text(probe.ok() ? 200 : 503, (probe.ok() ? "ok" : "not ok") + ": " + probe.detail() + "\n");
  }

  /**
   * The answer with a proof of who gives it, when the request carries a well-formed challenge and there is an
   * identity and a key to prove with; else as it is (the kubelet's probes, an agent without a key).
   */
  private static Response proved(Response answer, Request request, Optional<ProbeIdentity> identity, ProbeKeys keys) {
    List<String> challenges = request.headers().getOrDefault(
        ProbeProof.CHALLENGE_HEADER.toLowerCase(java.util.Locale.ROOT), List.of());
    if (identity.isEmpty() || challenges.size() != 1 || !ProbeProof.wellFormed(challenges.get(0))) {
      return answer;
    }
    Optional<ProbeKeys.Key> key = keys.now().current();
    if (key.isEmpty()) {
      return answer;
    }
    Map<String, String> headers = new LinkedHashMap<>(answer.headers());
    headers.put(ProbeProof.PROOF_HEADER, ProbeProof.prove(key.get(), challenges.get(0), identity.get().node(),
        identity.get().podUid(), answer.status()));
    return new Response(answer.status(), headers, answer.body());
  }

  /** The Prometheus library's own scrape handler (formats, name[] filters, gzip) over one parsed request. */
  private static Response scrape(PrometheusScrapeHandler handler, Request request) {
    Exchange exchange = new Exchange(request);
    try {
      handler.handleRequest(exchange);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return new Response(exchange.status, exchange.headers, exchange.body.toByteArray());
  }

  private static final class Exchange implements PrometheusHttpExchange, PrometheusHttpRequest, PrometheusHttpResponse {
    private final Request request;
    private final Map<String, String> headers = new LinkedHashMap<>();
    private final ByteArrayOutputStream body = new ByteArrayOutputStream();
    private int status = 500;

    Exchange(Request request) {
      this.request = request;
    }

    @Override
    public PrometheusHttpRequest getRequest() {
      return this;
    }

    @Override
    public PrometheusHttpResponse getResponse() {
      return this;
    }

    /**
     * The query without {@code debug=} (the library's debug formats, one of which doubles the answer): the text
     * formats only, whatever is asked. {@code name[]} filters stay.
     */
    @Override
    public String getQueryString() {
      if (request.query() == null) {
        return null;
      }
      String kept = java.util.Arrays.stream(request.query().split("&"))
          .filter(p -> !p.equals("debug") && !p.startsWith("debug="))
          .collect(java.util.stream.Collectors.joining("&"));
      return kept.isEmpty() ? null : kept;
    }

    /** Accept headers that ask for protobuf are not passed on: the answer is text (Prometheus or OpenMetrics). */
    @Override
    public Enumeration<String> getHeaders(String name) {
      List<String> values = request.headers().getOrDefault(name.toLowerCase(java.util.Locale.ROOT), List.of());
      if (name.equalsIgnoreCase("Accept")) {
        values = values.stream().filter(v -> !v.toLowerCase(java.util.Locale.ROOT).contains("protobuf")).toList();
      }
      return Collections.enumeration(values);
    }

    @Override
    public String getMethod() {
      return request.method();
    }

    @Override
    public String getRequestPath() {
      return request.path();
    }

    @Override
    public void setHeader(String name, String value) {
      if (!name.equalsIgnoreCase("Content-Length")) {
        headers.put(name, value);
      }
    }

    @Override
    public OutputStream sendHeadersAndGetBody(int statusCode, int contentLength) {
      status = statusCode;
      return body;
    }

    @Override
    public void handleException(IOException e) throws IOException {
      throw e;
    }

    @Override
    public void handleException(RuntimeException e) {
      throw e;
    }

    @Override
    public void close() {}
  }

  @Override
  public void close() {
    server.close();
  }
}
