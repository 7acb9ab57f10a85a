package io.egressservice.testbed;

import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.mockwebserver.http.MockResponse;
import io.fabric8.mockwebserver.http.Response;
import io.fabric8.mockwebserver.http.WebSocket;
import io.fabric8.mockwebserver.http.WebSocketListener;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The mock's CRUD dispatcher with one behaviour of a real API server it lacks: a watch history that expires. The
 * mock keeps no history and silently resumes a watch from any {@code resourceVersion}, so a client that missed
 * events while the server was away never learns it. A real server (etcd compacted, or its watch cache rebuilt after
 * a restart) answers a watch from a version it no longer holds with an {@code ERROR} event of status 410 Gone
 * ("too old resource version") and closes it; the client must list again. After {@link #expireHistory()}, every
 * watch from an older version is answered so.
 */
final class ExpiringWatchDispatcher extends KubernetesCrudDispatcher {
  private static final Pattern RESOURCE_VERSION = Pattern.compile("[?&]resourceVersion=(\\d+)");

  /** Watches from a version below this are gone (0: none). */
  private final AtomicLong oldestKept = new AtomicLong();
  private final AtomicLong goneAnswers = new AtomicLong();

  /** The history so far is gone, as after a restart of the API server: watches must start from a new list. */
  void expireHistory() {
    oldestKept.set(requestResourceVersion());
  }

  /** How many watches were answered 410 Gone. */
  long goneAnswers() {
    return goneAnswers.get();
  }

  @Override
  public MockResponse handleWatch(String path) {
    Matcher m = RESOURCE_VERSION.matcher(path);
    if (m.find() && !m.group(1).equals("0")) {
      long from = Long.parseLong(m.group(1));
      long oldest = oldestKept.get();
      if (from < oldest) {
        goneAnswers.incrementAndGet();
        String event = "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
            + "\"status\":\"Failure\",\"message\":\"too old resource version: " + from + " (" + oldest + ")\","
            + "\"reason\":\"Expired\",\"code\":410}}";
        return new MockResponse().withWebSocketUpgrade(new WebSocketListener() {
          @Override
          public void onOpen(WebSocket ws, Response response) {
            ws.send(event);
            ws.close(1000, "");
          }
        });
      }
    }
    return super.handleWatch(path);
  }
}
