package io.egressservice.testbed;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.ConfigMapBuilder;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.Watch;
import io.fabric8.kubernetes.client.Watcher;
import io.fabric8.kubernetes.client.WatcherException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The test API server's fault modes do what the tests that use them rely on: a silenced connection stays open and
 * delivers nothing either way while a new one works, a slow proxy holds each request back, and a watch handshake can
 * be answered 410 Gone. Driven through real sockets and fabric8's real client.
 */
class ApiFaultModesTest {
  private static final Duration QUIET = Duration.ofMillis(400);

  private final List<Socket> served = new CopyOnWriteArrayList<>();
  private ServerSocket echo;
  private ApiProxy proxy;

  @BeforeEach
  void startEcho() throws IOException {
    echo = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread t = new Thread(() -> {
      while (!echo.isClosed()) {
        try {
          Socket s = echo.accept();
          served.add(s);
          Thread e = new Thread(() -> echoOn(s), "echo");
          e.setDaemon(true);
          e.start();
        } catch (IOException e) {
          return;
        }
      }
    }, "echo-accept");
    t.setDaemon(true);
    t.start();
    proxy = new ApiProxy(echo.getLocalPort());
  }

  private static void echoOn(Socket s) {
    try (s; InputStream in = s.getInputStream(); OutputStream out = s.getOutputStream()) {
      byte[] buf = new byte[1024];
      int n;
      while ((n = in.read(buf)) >= 0) {
        out.write(buf, 0, n);
        out.flush();
      }
    } catch (IOException e) {
      // the test closed it
    }
  }

  @AfterEach
  void stop() throws IOException {
    proxy.close();
    echo.close();
    for (Socket s : served) {
      s.close();
    }
  }

  private Socket connect() throws IOException {
    Socket s = new Socket();
    s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), proxy.port()), 2000);
    s.setSoTimeout((int) QUIET.toMillis());
    return s;
  }

  /** Sends {@code b} and reads the echo: the byte, or -1 at end of stream; a timeout when nothing came. */
  private static int roundTrip(Socket s, int b) throws IOException {
    s.getOutputStream().write(b);
    s.getOutputStream().flush();
    return s.getInputStream().read();
  }

  @Test
  void silentModeKeepsOpenConnectionsOpenButDeliversNothingWhileNewOnesWork() throws IOException {
    try (Socket old = connect()) {
      assertThat(roundTrip(old, 1)).isEqualTo(1);

      proxy.mode(ApiProxy.Mode.SILENT);
      assertThatThrownBy(() -> roundTrip(old, 2)).as("nothing comes back, and no end of stream either")
          .isInstanceOf(SocketTimeoutException.class);
      for (Socket s : served) {
        s.close(); // the server ends its side: the silenced client must not hear that either
      }
      assertThatThrownBy(() -> roundTrip(old, 3)).isInstanceOf(SocketTimeoutException.class);

      try (Socket fresh = connect()) {
        assertThat(roundTrip(fresh, 4)).as("a connection opened after the switch passes").isEqualTo(4);
      }
      proxy.mode(ApiProxy.Mode.PASS);
      assertThatThrownBy(() -> roundTrip(old, 5)).as("a silenced connection stays silenced")
          .isInstanceOf(SocketTimeoutException.class);
      try (Socket fresh = connect()) {
        assertThat(roundTrip(fresh, 6)).isEqualTo(6);
      }
    }
  }

  @Test
  void aSlowProxyHoldsEveryRequestBackUntilItIsFastAgain() throws IOException {
    try (Socket s = connect()) {
      s.setSoTimeout(5000);
      proxy.slow(Duration.ofMillis(300));
      long start = System.nanoTime();
      assertThat(roundTrip(s, 1)).isEqualTo(1);
      assertThat(roundTrip(s, 2)).isEqualTo(2);
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(Duration.ofMillis(600));

      proxy.slow(Duration.ZERO);
      start = System.nanoTime();
      assertThat(roundTrip(s, 3)).isEqualTo(3);
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofMillis(300));
    }
    assertThatThrownBy(() -> proxy.slow(Duration.ofSeconds(-1))).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void aWatchHandshakeCanBeAnsweredGoneAndWatchesWorkOnceItIsOff(@TempDir Path dir) {
    try (ApiServer api = new ApiServer(dir, false, true)) {
      var configMaps = api.client().configMaps().inNamespace("watch");
      api.goneOnWatchHandshake(true);
      assertThatThrownBy(() -> configMaps.watch(new Recorder()))
          .isInstanceOfSatisfying(KubernetesClientException.class, e -> assertThat(e.getCode()).isEqualTo(410));
      assertThat(api.watchHandshakesGone()).isEqualTo(1);
      assertThat(configMaps.list().getItems()).as("lists are answered").isEmpty();

      api.goneOnWatchHandshake(false);
      Recorder r = new Recorder();
      try (Watch w = configMaps.watch(r)) {
        configMaps.resource(new ConfigMapBuilder().withNewMetadata().withName("a").endMetadata().build()).create();
        await().atMost(Duration.ofSeconds(10)).until(() -> r.names.contains("a"));
      }
      assertThat(api.watchHandshakesGone()).isEqualTo(1);
    }
  }

  private static final class Recorder implements Watcher<ConfigMap> {
    final List<String> names = new CopyOnWriteArrayList<>();

    @Override
    public void eventReceived(Action action, ConfigMap cm) {
      names.add(cm.getMetadata().getName());
    }

    @Override
    public void onClose(WatcherException cause) {
      // the test asserts what it saw
    }
  }
}
