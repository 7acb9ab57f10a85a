package io.egressservice.testbed;

import io.fabric8.mockwebserver.http.Dispatcher;
import io.fabric8.mockwebserver.http.MockResponse;
import io.fabric8.mockwebserver.http.RecordedRequest;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * While switched on, answers every watch request's HTTP handshake with status 410 Gone (a Status body, no upgrade),
 * as an API server behind some proxies and older aggregated APIs do for a version it no longer has: not the 410
 * watch <em>event</em> a client is built for. Everything else, and every watch while off, goes to the next dispatcher.
 */
final class WatchHandshakeFault extends Dispatcher {
  static final String GONE_BODY = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
      + "\"message\":\"too old resource version\",\"reason\":\"Expired\",\"code\":410}";

  private final Dispatcher next;
  private final AtomicBoolean on = new AtomicBoolean();
  private final AtomicLong answered = new AtomicLong();

  WatchHandshakeFault(Dispatcher next) {
    this.next = next;
  }

  void enabled(boolean enabled) {
    on.set(enabled);
  }

  /** How many watch handshakes were answered 410 so far. */
  long answered() {
    return answered.get();
  }

  @Override
  public MockResponse dispatch(RecordedRequest request) {
    if (on.get() && "GET".equals(request.getMethod()) && isWatch(request.getPath())) {
      answered.incrementAndGet();
      return new MockResponse().setResponseCode(410).addHeader("Content-Type", "application/json")
          .setBody(GONE_BODY);
    }
    return next.dispatch(request);
  }

  private static boolean isWatch(String path) {
    int q = path == null ? -1 : path.indexOf('?');
    if (q < 0) {
      return false;
    }
    for (String p : path.substring(q + 1).split("&")) {
      if (p.equals("watch=true") || p.equals("watch=1")) {
        return true;
      }
    }
    return false;
  }

  @Override
  public void shutdown() {
    next.shutdown();
  }
}
