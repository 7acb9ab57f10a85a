package io.egressservice.testing;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.Optional;

/** Lines over a TCP connection and one-datagram questions over UDP, for tests that keep a flow across a change. */
public final class LineSockets {
  private LineSockets() {}

  public static BufferedReader reader(Socket s) throws IOException {
    return new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
  }

  public static void say(Socket s, String line) throws IOException {
    OutputStream out = s.getOutputStream();
    out.write((line + "\n").getBytes(StandardCharsets.UTF_8));
    out.flush();
  }

  /** The next line, or empty when none came within the socket's timeout or the connection was reset. */
  public static Optional<String> read(BufferedReader r) {
    try {
      return Optional.ofNullable(r.readLine());
    } catch (IOException e) {
      return Optional.empty();
    }
  }

  /** One datagram on the flow and its answer (empty when none came within the socket's timeout). */
  public static Optional<String> ask(DatagramSocket s) throws IOException {
    byte[] out = "flow".getBytes(StandardCharsets.UTF_8);
    s.send(new DatagramPacket(out, out.length));
    byte[] in = new byte[512];
    DatagramPacket p = new DatagramPacket(in, in.length);
    try {
      s.receive(p);
      return Optional.of(new String(p.getData(), 0, p.getLength(), StandardCharsets.UTF_8));
    } catch (SocketTimeoutException e) {
      return Optional.empty();
    }
  }
}
