package io.egressservice.testbed.container;

import io.egressservice.netlink.NetnsThread;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLServerSocket;

/**
 * The API server as pods see it in a cluster: HTTPS on the control plane's address ({@code
 * KUBERNETES_SERVICE_HOST:KUBERNETES_SERVICE_PORT}), with a certificate for that address signed by the CA the kubelet
 * mounts as {@code ca.crt}, and only requests carrying the ServiceAccount token it mounts as {@code token} let through
 * (to the in-process mock server on 127.0.0.1, plain HTTP). Anything else is answered 401 and closed, so an agent
 * that does not use its in-cluster configuration cannot pass unnoticed. Only a connection's first request is checked
 * (the later ones on it come from the same client).
 *
 * <p>Who can reach it: anything that routes to the control plane's address in the cluster's namespaces; the token is
 * the test's own random value.
 */
public final class ApiFront implements AutoCloseable {
  static final int PORT = 6443;
  private static final int MAX_HEADERS = 64 * 1024;

  private final String address;
  private final int backendPort;
  private final String token;
  private final Path caPem;
  private final SSLServerSocket server;
  private final Thread acceptor;
  private volatile boolean closed;
  private volatile long refused;

  /**
   * Listens on {@code address}:6443 inside network namespace {@code netns} (a thread of {@code inside}), forwarding
   * to 127.0.0.1:{@code backendPort} of this process' own namespace. Key material is made in {@code dir}.
   */
  public ApiFront(Path dir, NetnsThread inside, String address, int backendPort) {
    this.address = address;
    this.backendPort = backendPort;
    byte[] random = new byte[24];
    new SecureRandom().nextBytes(random);
    this.token = "esa-testbed-" + HexFormat.of().formatHex(random);
    Path keystore = dir.resolve("api-server.p12");
    this.caPem = dir.resolve("ca.crt");
    String pass = HexFormat.of().formatHex(random, 0, 8);
    keytool("-genkeypair", "-alias", "api", "-keyalg", "EC", "-groupname", "secp256r1", "-validity", "2",
        "-dname", "CN=kube-apiserver", "-ext", "san=ip:" + address + ",dns:kubernetes.default.svc,dns:kubernetes",
        "-ext", "bc:c", "-keystore", keystore.toString(), "-storetype", "PKCS12", "-storepass", pass);
    keytool("-exportcert", "-rfc", "-alias", "api", "-keystore", keystore.toString(), "-storetype", "PKCS12",
        "-storepass", pass, "-file", caPem.toString());
    try {
      KeyStore ks = KeyStore.getInstance("PKCS12");
      try (InputStream in = Files.newInputStream(keystore)) {
        ks.load(in, pass.toCharArray());
      }
      KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
      kmf.init(ks, pass.toCharArray());
      SSLContext tls = SSLContext.getInstance("TLS");
      tls.init(kmf.getKeyManagers(), null, null);
      this.server = inside.call(() -> {
        SSLServerSocket s = (SSLServerSocket) tls.getServerSocketFactory().createServerSocket();
        s.setReuseAddress(true);
        s.bind(new InetSocketAddress(InetAddress.getByName(address), PORT), 64);
        return s;
      });
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (java.security.GeneralSecurityException e) {
      throw new IllegalStateException("cannot set up the API server's TLS: " + e.getMessage(), e);
    }
    acceptor = new Thread(this::accept, "api-front-" + address);
    acceptor.setDaemon(true);
    acceptor.start();
  }

  /** The control plane's address, what {@code KUBERNETES_SERVICE_HOST} says. */
  public String host() {
    return address;
  }

  public int port() {
    return PORT;
  }

  /** The ServiceAccount token the kubelet mounts (one for every pod: the mock server has no RBAC to tell them apart). */
  public String token() {
    return token;
  }

  /** The CA certificate (PEM) that signed the server's certificate: what the kubelet mounts as {@code ca.crt}. */
  public Path caCertificate() {
    return caPem;
  }

  /** How many connections were refused for a missing or wrong token. */
  public long refused() {
    return refused;
  }

  private void accept() {
    while (!closed) {
      try {
        Socket client = server.accept();
        Thread t = new Thread(() -> serve(client), "api-front-conn");
        t.setDaemon(true);
        t.start();
      } catch (IOException e) {
        if (!closed) {
          pause();
        }
      }
    }
  }

  private void serve(Socket client) {
    try (client) {
      client.setSoTimeout(30_000);
      InputStream in = client.getInputStream();
      byte[] head = readHeaders(in);
      if (!authorized(new String(head, StandardCharsets.ISO_8859_1))) {
        refused++;
        client.getOutputStream().write(("HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n"
            + "Connection: close\r\nContent-Length: 2\r\n\r\n{}").getBytes(StandardCharsets.ISO_8859_1));
        return;
      }
      client.setSoTimeout(0); // watches stay open
      try (Socket backend = new Socket(InetAddress.getLoopbackAddress(), backendPort)) {
        backend.getOutputStream().write(head);
        Thread up = new Thread(() -> pipe(in, backend, out(backend)), "api-front-up");
        up.setDaemon(true);
        up.start();
        pipe(backend.getInputStream(), client, client.getOutputStream());
        up.join(TimeUnit.SECONDS.toMillis(5));
      }
    } catch (IOException e) {
      // the connection ended
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private boolean authorized(String head) {
    for (String line : head.split("\r\n")) {
      int colon = line.indexOf(':');
      if (colon > 0 && line.substring(0, colon).trim().toLowerCase(Locale.ROOT).equals("authorization")) {
        return line.substring(colon + 1).trim().equals("Bearer " + token);
      }
    }
    return false;
  }

  private static byte[] readHeaders(InputStream in) throws IOException {
    java.io.ByteArrayOutputStream buf = new java.io.ByteArrayOutputStream();
    int matched = 0;
    byte[] end = {'\r', '\n', '\r', '\n'};
    while (matched < 4) {
      int b = in.read();
      if (b < 0 || buf.size() >= MAX_HEADERS) {
        throw new IOException("no complete request head");
      }
      buf.write(b);
      matched = b == end[matched] ? matched + 1 : (b == '\r' ? 1 : 0);
    }
    return buf.toByteArray();
  }

  private static OutputStream out(Socket s) {
    try {
      return s.getOutputStream();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Copies until either side ends, then closes {@code to}'s sending side so that the other direction ends too. */
  private static void pipe(InputStream from, Socket to, OutputStream out) {
    byte[] buf = new byte[16 * 1024];
    try {
      for (int n; (n = from.read(buf)) >= 0; ) {
        out.write(buf, 0, n);
        out.flush();
      }
    } catch (IOException e) {
      // one side closed
    } finally {
      try {
        to.close();
      } catch (IOException e) {
        // closing
      }
    }
  }

  private static void keytool(String... args) {
    List<String> command = new java.util.ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "keytool").toString()));
    command.addAll(List.of(args));
    try {
      Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
        throw new IllegalStateException("keytool " + args[0] + " failed: " + out.trim());
      }
    } catch (IOException e) {
      throw new IllegalStateException("cannot run keytool (a JDK's): " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private static void pause() {
    try {
      Thread.sleep(50);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Stops listening; open connections end with their peers. */
  @Override
  public void close() {
    closed = true;
    try {
      server.close();
    } catch (IOException e) {
      // closing
    }
  }
}
