package io.egressservice.informers;

import io.fabric8.kubernetes.client.http.AsyncBody;
import io.fabric8.kubernetes.client.http.HttpClient;
import io.fabric8.kubernetes.client.http.HttpRequest;
import io.fabric8.kubernetes.client.http.HttpResponse;
import io.fabric8.kubernetes.client.http.Interceptor;
import io.fabric8.kubernetes.client.http.TlsVersion;
import io.fabric8.kubernetes.client.http.WebSocket;
import io.fabric8.kubernetes.client.jdkhttp.JdkHttpClientFactory;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManager;
import javax.net.ssl.TrustManager;

/**
 * fabric8's JDK HTTP client with every watch's WebSocket handed to {@link SilentWatches} on its way: the plumbing
 * only (each builder and client delegates, the WebSocket builder wraps the listener). fabric8 offers no hook on a
 * WebSocket's frames or on the listener its watches use; this factory is the one documented place to add one.
 */
final class GuardedHttpClient implements HttpClient {
  private final HttpClient delegate;
  private final SilentWatches watches;

  private GuardedHttpClient(HttpClient delegate, SilentWatches watches) {
    this.delegate = delegate;
    this.watches = watches;
  }

  /**
   * The factory to give {@code KubernetesClientBuilder#withHttpClientFactory}: HTTP/1.1, so that a request that
   * times out takes its connection with it (see {@link SilentWatches}).
   */
  static HttpClient.Factory factory(SilentWatches watches) {
    JdkHttpClientFactory jdk = new JdkHttpClientFactory();
    return () -> {
      HttpClient.Builder builder = jdk.newBuilder();
      return new Builder(builder.preferHttp11(), watches);
    };
  }

  @Override
  public void close() {
    delegate.close();
  }

  @Override
  public DerivedClientBuilder newBuilder() {
    return new Derived(delegate.newBuilder(), watches);
  }

  @Override
  public <T> CompletableFuture<HttpResponse<T>> sendAsync(HttpRequest request, Class<T> type) {
    return delegate.sendAsync(request, type);
  }

  @Override
  public CompletableFuture<HttpResponse<AsyncBody>> consumeBytes(HttpRequest request,
      AsyncBody.Consumer<List<ByteBuffer>> consumer) {
    return delegate.consumeBytes(request, consumer);
  }

  @Override
  public WebSocket.Builder newWebSocketBuilder() {
    return new WebSocketBuilder(delegate.newWebSocketBuilder(), watches);
  }

  @Override
  public HttpRequest.Builder newHttpRequestBuilder() {
    return delegate.newHttpRequestBuilder();
  }

  @Override
  public boolean isClosed() {
    return delegate.isClosed();
  }

  private record Derived(DerivedClientBuilder delegate, SilentWatches watches) implements DerivedClientBuilder {
    @Override
    public HttpClient build() {
      return new GuardedHttpClient(delegate.build(), watches);
    }

    @Override
    public DerivedClientBuilder addOrReplaceInterceptor(String name, Interceptor interceptor) {
      return new Derived(delegate.addOrReplaceInterceptor(name, interceptor), watches);
    }

    @Override
    public DerivedClientBuilder authenticatorNone() {
      return new Derived(delegate.authenticatorNone(), watches);
    }

    @Override
    public DerivedClientBuilder tag(Object value) {
      return new Derived(delegate.tag(value), watches);
    }
  }

  private record Builder(HttpClient.Builder delegate, SilentWatches watches) implements HttpClient.Builder {
    @Override
    public HttpClient build() {
      return new GuardedHttpClient(delegate.build(), watches);
    }

    @Override
    public HttpClient.Builder connectTimeout(long connectTimeout, TimeUnit unit) {
      return new Builder(delegate.connectTimeout(connectTimeout, unit), watches);
    }

    @Override
    public HttpClient.Builder addOrReplaceInterceptor(String name, Interceptor interceptor) {
      return new Builder(delegate.addOrReplaceInterceptor(name, interceptor), watches);
    }

    @Override
    public HttpClient.Builder authenticatorNone() {
      return new Builder(delegate.authenticatorNone(), watches);
    }

    @Override
    public HttpClient.Builder tag(Object value) {
      return new Builder((HttpClient.Builder) delegate.tag(value), watches);
    }

    @Override
    public HttpClient.Builder sslContext(KeyManager[] keyManagers, TrustManager[] trustManagers) {
      return new Builder(delegate.sslContext(keyManagers, trustManagers), watches);
    }

    @Override
    public HttpClient.Builder followAllRedirects() {
      return new Builder(delegate.followAllRedirects(), watches);
    }

    @Override
    public HttpClient.Builder proxyAddress(InetSocketAddress proxyAddress) {
      return new Builder(delegate.proxyAddress(proxyAddress), watches);
    }

    @Override
    public HttpClient.Builder proxyAuthorization(String credentials) {
      return new Builder(delegate.proxyAuthorization(credentials), watches);
    }

    @Override
    public HttpClient.Builder tlsVersions(TlsVersion... tlsVersions) {
      return new Builder(delegate.tlsVersions(tlsVersions), watches);
    }

    @Override
    public HttpClient.Builder preferHttp11() {
      return new Builder(delegate.preferHttp11(), watches);
    }

    @Override
    public HttpClient.Builder proxyType(ProxyType type) {
      return new Builder(delegate.proxyType(type), watches);
    }
  }

  /**
   * fabric8 calls a builder's setters for their effect and keeps using the builder it made (the watch manager
   * ignores what {@code uri} returns), so this one is mutable like fabric8's own: the target set here is the one
   * {@link #buildAsync} opens, named in the watch's idle metric.
   */
  private static final class WebSocketBuilder implements WebSocket.Builder {
    private final WebSocket.Builder delegate;
    private final SilentWatches watches;
    private URI target;

    WebSocketBuilder(WebSocket.Builder delegate, SilentWatches watches) {
      this.delegate = delegate;
      this.watches = watches;
    }

    @Override
    public CompletableFuture<WebSocket> buildAsync(WebSocket.Listener listener) {
      return watches.open(delegate, target, listener);
    }

    @Override
    public WebSocket.Builder subprotocol(String protocol) {
      delegate.subprotocol(protocol);
      return this;
    }

    @Override
    public WebSocket.Builder header(String name, String value) {
      delegate.header(name, value);
      return this;
    }

    @Override
    public WebSocket.Builder setHeader(String k, String v) {
      delegate.setHeader(k, v);
      return this;
    }

    @Override
    public WebSocket.Builder uri(URI uri) {
      delegate.uri(uri);
      target = uri;
      return this;
    }

    @Override
    public WebSocket.Builder connectTimeout(long timeout, TimeUnit timeUnit) {
      delegate.connectTimeout(timeout, timeUnit);
      return this;
    }
  }
}
