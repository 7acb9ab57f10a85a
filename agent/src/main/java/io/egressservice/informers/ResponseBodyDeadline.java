package io.egressservice.informers;

import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.http.AsyncBody;
import io.fabric8.kubernetes.client.http.HttpRequest;
import io.fabric8.kubernetes.client.http.HttpResponse;
import io.fabric8.kubernetes.client.http.Interceptor;
import io.fabric8.kubernetes.client.http.StandardHttpRequest;
import io.fabric8.kubernetes.client.utils.Utils;
import java.net.http.HttpTimeoutException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Bounds the time a response's body may take after its headers. The client's request timeout
 * ({@code requestTimeout}, 10 s by default) ends where the headers arrive: fabric8's fail-safe and the JDK's
 * {@code HttpRequest.timeout} both stop there. A body that stalls after them (an HTTP/2 stream that stops
 * delivering, seen after an API server outage, or a proxy that hangs mid-response) left the request waiting
 * forever: an informer's relist that never ends and never retries, so its kind is never watched again and its
 * cache silently stays as it was (found by the chaos soak: one node kept old endpoints for minutes), or a
 * backfill's blocking GET that holds its thread.
 *
 * <p>With this interceptor a body not complete within the request's own timeout after its headers fails with an
 * {@link HttpTimeoutException}: the informer retries (its list, then its watch) as after any failed request, and
 * a blocking call throws. Requests without a timeout are left alone (the agent makes none; watches are WebSockets,
 * which this does not see). Costs one scheduled task per request, cancelled when the body completes.
 */
public final class ResponseBodyDeadline implements Interceptor {
  private static final Logger LOG = LoggerFactory.getLogger(ResponseBodyDeadline.class);
  static final String NAME = "egress-service-agent-body-deadline";

  /** Adds it to the clients this builder builds. */
  public static KubernetesClientBuilder installOn(KubernetesClientBuilder builder) {
    return builder.withHttpClientBuilderConsumer(b -> b.addOrReplaceInterceptor(NAME, new ResponseBodyDeadline()));
  }

  @Override
  public void after(HttpRequest request, HttpResponse<?> response, AsyncBody.Consumer<List<ByteBuffer>> consumer) {
    if (!(response.body() instanceof AsyncBody body) || !(request instanceof StandardHttpRequest standard)) {
      return;
    }
    Duration timeout = standard.getTimeout();
    if (timeout == null || timeout.isNegative() || timeout.isZero() || body.done().isDone()) {
      return;
    }
    var deadline = Utils.schedule(Runnable::run, () -> expire(request, body, timeout), timeout.toMillis(),
        TimeUnit.MILLISECONDS);
    body.done().whenComplete((v, t) -> deadline.cancel(false));
  }

  private static void expire(HttpRequest request, AsyncBody body, Duration timeout) {
    HttpTimeoutException stalled = new HttpTimeoutException(request.method() + " " + request.uri()
        + ": the API server sent the response's headers but not all of its body within " + timeout.toMillis()
        + " ms");
    if (body.done().completeExceptionally(stalled)) {
      LOG.warn("{}; the request is abandoned (an informer lists again)", stalled.getMessage());
      body.cancel();
    }
  }
}
