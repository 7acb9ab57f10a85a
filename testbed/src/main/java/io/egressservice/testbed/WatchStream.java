package io.egressservice.testbed;

import io.fabric8.mockwebserver.crud.AttributeSet;
import io.fabric8.mockwebserver.http.Response;
import io.fabric8.mockwebserver.http.WebSocket;
import io.fabric8.mockwebserver.http.WebSocketListener;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Consumer;

/**
 * One watch's connection: the events for it, in the order they were handed over, whether the socket is open yet
 * or not (what comes before it opens waits, so nothing between the request and the open is lost). Sending happens
 * on the stream's own thread, so the writer that produced an event never waits on a slow client.
 */
final class WatchStream extends WebSocketListener {
  /** Events held for a socket not open yet; past this its client is taken as gone. */
  static final int MAX_PENDING = 100_000;
  private final AttributeSet query;
  private final AttributeSet typeQuery;
  private final boolean bookmarks;
  private final Consumer<WatchStream> onEnd;
  private final ExecutorService sender = Executors.newSingleThreadExecutor(r -> {
    Thread t = new Thread(r, "api-watch-send");
    t.setDaemon(true);
    return t;
  });
  private final List<String> pending = new ArrayList<>();
  private WebSocket socket; // guarded by this; null until open
  private boolean ended; // guarded by this
  private volatile Optional<String> type = Optional.empty();

  /**
   * A watch of the objects {@code query} matches; {@code typeQuery} matches every object of its kind (how its
   * bookmarks learn the kind to carry).
   */
  WatchStream(AttributeSet query, AttributeSet typeQuery, boolean bookmarks, Consumer<WatchStream> onEnd) {
    this.query = query;
    this.typeQuery = typeQuery;
    this.bookmarks = bookmarks;
    this.onEnd = onEnd;
  }

  AttributeSet query() {
    return query;
  }

  AttributeSet typeQuery() {
    return typeQuery;
  }

  /** The {@code "kind":…,"apiVersion":…} of its objects, once known. */
  Optional<String> type() {
    return type;
  }

  void type(String kindAndApiVersion) {
    type = Optional.of(kindAndApiVersion);
  }

  /** Whether its client asked for bookmarks ({@code allowWatchBookmarks=true}). */
  boolean bookmarks() {
    return bookmarks;
  }

  synchronized void send(String event) {
    if (ended) {
      return;
    }
    if (socket == null) {
      if (pending.size() >= MAX_PENDING) {
        // a connection that never opens: its client left during the upgrade; keep no unbounded queue for it
        end();
        return;
      }
      pending.add(event);
    } else {
      WebSocket ws = socket;
      sender.execute(() -> ws.send(event));
    }
  }

  @Override
  public synchronized void onOpen(WebSocket webSocket, Response response) {
    socket = webSocket;
    pending.forEach(e -> sender.execute(() -> webSocket.send(e)));
    pending.clear();
  }

  @Override
  public void onClosing(WebSocket webSocket, int code, String reason) {
    webSocket.close(code, reason);
    end();
  }

  @Override
  public void onClosed(WebSocket webSocket, int code, String reason) {
    end();
  }

  @Override
  public void onFailure(WebSocket webSocket, Throwable error, Response response) {
    webSocket.close(1000, String.valueOf(error.getMessage()));
    end();
  }

  private void end() {
    synchronized (this) {
      ended = true;
      pending.clear();
    }
    sender.shutdown();
    onEnd.accept(this);
  }
}
