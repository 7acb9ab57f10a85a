package io.egressservice.nft;

import io.egressservice.netlink.NetnsThread;
import io.egressservice.testing.Netns;
import io.egressservice.testing.Privileges;
import java.util.Optional;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The fixture of the nft table tests ({@code @RegisterExtension}): per test a throwaway namespace, a thread in it
 * and an {@link NftClient} on that thread when asked for (skipped without root); closed after the test, client
 * first.
 */
final class NftNamespace implements BeforeEachCallback, AfterEachCallback {
  private final String name;
  private Netns ns;
  private NetnsThread thread;
  private NftClient client;

  NftNamespace(String name) {
    this.name = name;
  }

  @Override
  public void beforeEach(ExtensionContext context) {
    Privileges.assumeNetAdmin();
    ns = Netns.create(name);
    thread = NetnsThread.enter(Optional.of(ns.name()));
  }

  /** The namespace, for {@code nft list} as the oracle. */
  Netns ns() {
    return ns;
  }

  /** The thread in the namespace, for what opens a client of its own. */
  NetnsThread thread() {
    return thread;
  }

  /** A client on {@link #thread()}, opened on first use (a test that opens its own needs none). */
  NftClient client() {
    if (client == null) {
      client = NftClient.open(thread);
    }
    return client;
  }

  @Override
  public void afterEach(ExtensionContext context) {
    try {
      if (client != null) {
        client.close();
      }
    } finally {
      try {
        if (thread != null) {
          thread.close();
        }
      } finally {
        if (ns != null) {
          ns.close();
        }
      }
    }
  }
}
