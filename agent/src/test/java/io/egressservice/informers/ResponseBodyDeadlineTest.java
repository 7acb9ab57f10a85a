package io.egressservice.informers;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.egressservice.controller.AgentSerialization;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A response whose headers arrive but whose body stops half-way: an API server (or what is between) that stalls
 * mid-response. The client's request timeout alone ends at the headers, so without {@link ResponseBodyDeadline}
 * a list waits forever and an informer never lists again.
 */
class ResponseBodyDeadlineTest {
  private static final String LIST = "{\"apiVersion\":\"v1\",\"kind\":\"ServiceList\",\"metadata\":{\"resourceVersion\":\"7\"},"
      + "\"items\":[{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"web\",\"namespace\":\"shop\","
      + "\"resourceVersion\":\"7\"}}]}";

  private final CountDownLatch release = new CountDownLatch(1);
  private final AtomicInteger lists = new AtomicInteger();
  private HttpServer server;
  private KubernetesClient client;

  /** Serves service lists: the first {@code stalled} of them send half their body and then nothing. */
  private void serve(int stalled) throws IOException {
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.setExecutor(Executors.newCachedThreadPool(r -> {
      Thread t = new Thread(r, "stalling-api-server");
      t.setDaemon(true);
      return t;
    }));
    server.createContext("/api/v1/services", exchange -> {
      if (exchange.getRequestURI().getQuery() != null && exchange.getRequestURI().getQuery().contains("watch=true")) {
        exchange.sendResponseHeaders(404, -1); // no watch here: the informer keeps retrying it, which is fine
        exchange.close();
        return;
      }
      byte[] body = LIST.getBytes(StandardCharsets.UTF_8);
      if (lists.incrementAndGet() <= stalled) {
        stall(exchange, body);
      } else {
        exchange.getResponseHeaders().add("Content-Type", "application/json");
        exchange.sendResponseHeaders(200, body.length);
        try (OutputStream out = exchange.getResponseBody()) {
          out.write(body);
        }
      }
    });
    server.start();
    client = ResponseBodyDeadline.installOn(AgentSerialization.clientBuilder())
        .withConfig(new ConfigBuilder().withMasterUrl("http://127.0.0.1:" + server.getAddress().getPort())
            .withRequestTimeout(500).withWatchReconnectInterval(100).withRequestRetryBackoffLimit(0).build())
        .build();
  }

  private void stall(HttpExchange exchange, byte[] body) throws IOException {
    exchange.getResponseHeaders().add("Content-Type", "application/json");
    exchange.sendResponseHeaders(200, body.length);
    OutputStream out = exchange.getResponseBody();
    out.write(body, 0, body.length / 2);
    out.flush();
    try {
      release.await(30, TimeUnit.SECONDS); // the rest never comes while the test runs
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    exchange.close();
  }

  @BeforeEach
  void noServerYet() {
    server = null;
    client = null;
  }

  @AfterEach
  void stop() {
    release.countDown();
    if (client != null) {
      client.close();
    }
    if (server != null) {
      server.stop(0);
    }
  }

  @Test
  void aListWhoseBodyStallsAfterItsHeadersFailsWithinItsRequestTimeout() throws IOException {
    serve(1);
    long start = System.nanoTime();
    assertTimeoutPreemptively(Duration.ofSeconds(10), () ->
        assertThatThrownBy(() -> client.services().inAnyNamespace().list())
            .isInstanceOf(KubernetesClientException.class)
            .hasStackTraceContaining("the API server sent the response's headers but not all of its body within 500 ms"));
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
  }

  @Test
  void anInformerWhoseListStallsListsAgainAndCachesWhatTheServerHas() throws IOException {
    serve(1);
    SharedIndexInformer<Service> informer = client.services().inAnyNamespace().runnableInformer(0);
    informer.exceptionHandler((started, error) -> true);
    try {
      informer.start();
      Awaitility.await().atMost(Duration.ofSeconds(15)).until(() -> informer.getStore().list().size() == 1);
      assertThat(lists.get()).as("lists: the stalled one, then at least one that completed").isGreaterThanOrEqualTo(2);
      assertThat(informer.getStore().list()).extracting(s -> s.getMetadata().getName()).containsExactly("web");
    } finally {
      informer.stop();
    }
  }
}
