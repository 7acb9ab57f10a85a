package io.egressservice.testbed;

import io.fabric8.mockwebserver.http.Dispatcher;
import io.fabric8.mockwebserver.http.MockResponse;
import io.fabric8.mockwebserver.http.RecordedRequest;

/**
 * Answers {@code GET /version} as a real API server does (a few hundred bytes naming its version) and hands
 * every other request to the mock server's dispatcher. The CRUD mock has no such endpoint: it answers
 * {@code /version} with a List of every object it holds (measured: 2.1 MB at 1,000 services, much more at 5,000).
 * The agent asks {@code /version} whenever its watches have been quiet for 10 s (its API probe), so without this
 * an idle agent in a bench or a testbed cluster downloads and parses the whole store every 10 s: work, allocation
 * and heap growth no real cluster causes.
 */
public final class VersionEndpoint extends Dispatcher {
  /** The shape of the API server's answer (a {@code version.Info}). */
  static final String BODY = "{\"major\":\"1\",\"minor\":\"31\",\"gitVersion\":\"v1.31.0\","
      + "\"gitCommit\":\"0000000000000000000000000000000000000000\",\"gitTreeState\":\"clean\","
      + "\"buildDate\":\"2026-01-01T00:00:00Z\",\"goVersion\":\"go1.22.5\",\"compiler\":\"gc\","
      + "\"platform\":\"linux/amd64\"}";

  private final Dispatcher next;

  public VersionEndpoint(Dispatcher next) {
    this.next = next;
  }

  @Override
  public MockResponse dispatch(RecordedRequest request) {
    String path = request.getPath();
    boolean version = path != null && (path.equals("/version") || path.startsWith("/version?"));
    if (version && "GET".equals(request.getMethod())) {
      return new MockResponse().setResponseCode(200).addHeader("Content-Type", "application/json").setBody(BODY);
    }
    return next.dispatch(request);
  }

  @Override
  public void shutdown() {
    next.shutdown();
  }
}
