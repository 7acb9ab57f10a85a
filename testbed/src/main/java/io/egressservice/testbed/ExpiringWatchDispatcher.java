package io.egressservice.testbed;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.client.server.mock.KubernetesAttributesExtractor;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.utils.Serialization;
import io.fabric8.mockwebserver.crud.Attribute;
import io.fabric8.mockwebserver.crud.AttributeSet;
import io.fabric8.mockwebserver.http.MockResponse;
import io.fabric8.mockwebserver.http.Response;
import io.fabric8.mockwebserver.http.WebSocket;
import io.fabric8.mockwebserver.http.WebSocketListener;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The mock's CRUD dispatcher with the watch semantics of a real API server, which the mock lacks:
 * <ul>
 *   <li><b>Resumption from a {@code resourceVersion}.</b> The mock answers every watch with an ADDED for each
 *   current object, whatever version it asks for, so a delete made while a client was away is never told to it
 *   (only a relist would notice). Here every change is kept in a bounded {@link WatchHistory}; a watch from version
 *   R gets exactly the changes after R that match it, in order, then the live ones. A watch from 0 (or none) gets
 *   the current objects as ADDED, a real server's "any" start.</li>
 *   <li><b>An expiring history.</b> A watch from a version the history no longer covers (older than its bound, or
 *   than the last {@link #expireHistory()}, as after a restart) is answered with an {@code ERROR} event of status
 *   410 Gone and closed: its client must list again.</li>
 *   <li><b>Deletes have versions.</b> The mock deletes without a new {@code resourceVersion}; here a delete takes
 *   one and its DELETED event carries it, so list, watch and resumption agree on one order.</li>
 *   <li><b>Bookmarks.</b> A watch with {@code allowWatchBookmarks=true} gets, every {@code bookmarkEvery}, a
 *   BOOKMARK event with the latest version, so an idle client resumes from a recent version.</li>
 * </ul>
 * A change is recorded and handed to the live watches under one lock, and a new watch takes its replay and joins
 * the live ones under the same lock, so no change is lost or sent twice to a watch opening while writes go on. The
 * mock's list answers carry the latest version (it composes them under its read lock), so a client's
 * list-then-watch misses nothing.
 */
final class ExpiringWatchDispatcher extends KubernetesCrudDispatcher implements AutoCloseable {
  /** Changes kept by default: a real server keeps minutes of them; churn tests make a few thousand. */
  static final int DEFAULT_HISTORY = 10_000;
  static final Duration DEFAULT_BOOKMARK_EVERY = Duration.ofSeconds(1);

  /** The attributes that name a resource type in the mock's keys and paths. */
  private static final List<String> TYPE_ATTRIBUTES = List.of(KubernetesAttributesExtractor.PLURAL,
      KubernetesAttributesExtractor.API, KubernetesAttributesExtractor.VERSION);

  private final WatchHistory history;
  /** {@code "kind":…,"apiVersion":…} by the type attributes of the objects written so far. */
  private final Map<AttributeSet, String> types = new ConcurrentHashMap<>();
  private final Set<WatchStream> streams = ConcurrentHashMap.newKeySet();
  /** Orders changes against watches opening and bookmarks (taken inside the mock's own lock, never around it). */
  private final Object order = new Object();
  private final AtomicLong goneAnswers = new AtomicLong();
  private final ScheduledExecutorService bookmarker = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "api-watch-bookmarks");
    t.setDaemon(true);
    return t;
  });

  ExpiringWatchDispatcher() {
    this(DEFAULT_HISTORY, DEFAULT_BOOKMARK_EVERY);
  }

  ExpiringWatchDispatcher(int historySize, Duration bookmarkEvery) {
    history = new WatchHistory(historySize);
    bookmarker.scheduleWithFixedDelay(this::sendBookmarks, bookmarkEvery.toMillis(), bookmarkEvery.toMillis(),
        TimeUnit.MILLISECONDS);
  }

  /** The history so far is gone, as after a restart of the API server: watches must start from a new list. */
  void expireHistory() {
    synchronized (order) {
      history.expire(requestResourceVersion());
    }
  }

  /** How many watches were answered 410 Gone. */
  long goneAnswers() {
    return goneAnswers.get();
  }

  @Override
  public void processEvent(String path, AttributeSet pathAttributes, AttributeSet oldAttributes,
      GenericKubernetesResource resource, String newState) {
    // the mock calls this under its write lock: one change at a time, in version order
    Optional<String> before = Optional.ofNullable(oldAttributes).map(map::get);
    super.processEvent(path, pathAttributes, oldAttributes, resource, newState);
    Optional<String> after = Optional.ofNullable(newState);
    if (before.equals(after)) {
      return; // the mock sends nothing for it either
    }
    long version;
    if (after.isPresent()) {
      version = resourceVersion(after.get());
      if (before.isPresent() && version == resourceVersion(before.get())) {
        return; // an update that changed nothing: the mock kept the version, a real server sends no event
      }
    } else {
      version = requestResourceVersion();
      before = before.map(json -> withResourceVersion(json, version));
    }
    Optional<AttributeSet> afterKey = after.map(json -> keyOf(pathAttributes, resource, json));
    afterKey.ifPresent(k -> rememberType(k, after.get()));
    WatchHistory.Change change = new WatchHistory.Change(version, before.map(b -> oldAttributes), before,
        afterKey, after);
    synchronized (order) {
      history.record(change);
      for (WatchStream s : streams) {
        change.eventFor(s.query()).ifPresent(s::send);
      }
    }
  }

  /** The key the mock stored {@code json} under (its own computation, repeated: it does not return it). */
  private AttributeSet keyOf(AttributeSet pathAttributes, GenericKubernetesResource resource, String json) {
    KubernetesAttributesExtractor extractor = (KubernetesAttributesExtractor) attributeExtractor;
    AttributeSet key = resource != null ? extractor.extract(resource) : extractor.fromResource(json);
    return key.containsKey(KubernetesAttributesExtractor.PLURAL) ? key : AttributeSet.merge(pathAttributes, key);
  }

  @Override
  public MockResponse handleWatch(String path) {
    // the mock calls this under its read lock: no change is being made meanwhile
    Map<String, String> query = queryParameters(path);
    long from = Optional.ofNullable(query.get("resourceVersion")).filter(v -> !v.isEmpty()).map(Long::parseLong)
        .orElse(0L);
    AttributeSet selector = attributeExtractor.fromPath(path);
    Optional<String> name = Optional.ofNullable(query.get("fieldSelector")).stream()
        .flatMap(f -> List.of(f.split(",")).stream())
        .filter(f -> f.startsWith("metadata.name=")).map(f -> f.substring("metadata.name=".length())).findFirst();
    if (name.isPresent()) {
      selector = selector.add(new Attribute(KubernetesAttributesExtractor.NAME, name.get()));
    }
    WatchStream stream = new WatchStream(selector, typeQuery(path),
        "true".equals(query.get("allowWatchBookmarks")), streams::remove);
    synchronized (order) {
      if (from == 0) {
        for (Map.Entry<AttributeSet, String> e : current()) {
          if (e.getKey().matches(selector)) {
            stream.send(WatchHistory.event("ADDED", e.getValue()));
          }
        }
      } else {
        Optional<List<WatchHistory.Change>> replay = history.after(from);
        if (replay.isEmpty()) {
          return gone(from, history.oldestServable());
        }
        for (WatchHistory.Change c : replay.get()) {
          c.eventFor(selector).ifPresent(stream::send);
        }
      }
      streams.add(stream);
    }
    return new MockResponse().withWebSocketUpgrade(stream);
  }

  private MockResponse gone(long from, long oldest) {
    goneAnswers.incrementAndGet();
    String event = WatchHistory.event("ERROR", "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
        + "\"status\":\"Failure\",\"message\":\"too old resource version: " + from + " (" + oldest + ")\","
        + "\"reason\":\"Expired\",\"code\":410}");
    return new MockResponse().withWebSocketUpgrade(new WebSocketListener() {
      @Override
      public void onOpen(WebSocket ws, Response response) {
        ws.send(event);
        ws.close(1000, "");
      }
    });
  }

  private void sendBookmarks() {
    try {
      synchronized (order) {
        long latest = history.latest();
        for (WatchStream s : streams) {
          if (s.bookmarks()) {
            if (s.type().isEmpty()) {
              typeOf(s.typeQuery()).ifPresent(s::type);
            }
            s.type().ifPresent(t -> s.send(WatchHistory.event("BOOKMARK",
                "{" + t + ",\"metadata\":{\"resourceVersion\":\"" + latest + "\"}}")));
          }
        }
      }
    } catch (RuntimeException e) {
      // a bookmark lost is harmless; the ticker must go on
    }
  }

  /**
   * The kind and apiVersion of the objects {@code typeQuery} matches, from one that was ever written (a bookmark
   * carries its watch's kind; the path names only the plural, so a watch of a kind never written gets none).
   */
  private Optional<String> typeOf(AttributeSet typeQuery) {
    return types.entrySet().stream().filter(e -> e.getKey().matches(typeQuery)).map(Map.Entry::getValue).findFirst();
  }

  /** Remembers the kind and apiVersion of the object stored under {@code key}, for bookmarks. */
  private void rememberType(AttributeSet key, String json) {
    AttributeSet type = new AttributeSet();
    for (String k : TYPE_ATTRIBUTES) {
      Attribute a = key.getAttribute(k);
      if (a != null) {
        type = type.add(a);
      }
    }
    types.computeIfAbsent(type, t -> {
      JsonNode node = parse(json);
      // none recorded (null) for an object without them: a later one of its type may have them
      return node.hasNonNull("kind") && node.hasNonNull("apiVersion")
          ? "\"kind\":" + node.get("kind") + ",\"apiVersion\":" + node.get("apiVersion") : null;
    });
  }

  private List<Map.Entry<AttributeSet, String>> current() {
    synchronized (map) {
      return new ArrayList<>(map.entrySet());
    }
  }

  /** Matches every object of the path's resource type (plural, group, version), wherever it lives. */
  private AttributeSet typeQuery(String path) {
    Map<String, String> parts = ((KubernetesAttributesExtractor) attributeExtractor).fromKubernetesPath(path);
    AttributeSet type = new AttributeSet();
    for (String k : TYPE_ATTRIBUTES) {
      if (parts.containsKey(k)) {
        type = type.add(new Attribute(k, parts.get(k)));
      }
    }
    return type;
  }

  private static Map<String, String> queryParameters(String path) {
    Map<String, String> out = new HashMap<>();
    try {
      String q = new URI(path).getRawQuery();
      if (q != null) {
        for (String p : q.split("&")) {
          int eq = p.indexOf('=');
          if (eq > 0) {
            out.put(URLDecoder.decode(p.substring(0, eq), StandardCharsets.UTF_8),
                URLDecoder.decode(p.substring(eq + 1), StandardCharsets.UTF_8));
          }
        }
      }
    } catch (URISyntaxException e) {
      // no parameters then, as the mock treats it
    }
    return out;
  }

  private static long resourceVersion(String json) {
    String v = parse(json).path("metadata").path("resourceVersion").asText("");
    return v.isEmpty() ? 0 : Long.parseLong(v);
  }

  private static String withResourceVersion(String json, long version) {
    ObjectNode node = (ObjectNode) parse(json);
    ((ObjectNode) node.get("metadata")).put("resourceVersion", String.valueOf(version));
    return node.toString();
  }

  private static JsonNode parse(String json) {
    try {
      return Serialization.jsonMapper().readTree(json);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("the mock stored an object that is not JSON", e);
    }
  }

  /** Stops the bookmarks (the server's watches end with it). */
  @Override
  public void close() {
    bookmarker.shutdownNow();
  }
}
