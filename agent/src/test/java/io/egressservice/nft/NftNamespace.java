package io.egressservice.nft;

import io.egressservice.kernel.linux.NftClient;
import io.egressservice.netlink.NetnsThread;
import io.egressservice.testing.Netns;
import io.egressservice.testing.NetnsFixture;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The fixture of the nft table tests ({@code @RegisterExtension}): the shared {@link NetnsFixture} (per test a
 * throwaway namespace and a thread in it, skipped without root) plus an {@link NftClient} on that thread when asked
 * for; what the test opens closes after it, newest first, then the namespace.
 */
final class NftNamespace implements BeforeEachCallback, AfterEachCallback {
  private final NetnsFixture fixture;
  private NftClient client;

  NftNamespace(String name) {
    this.fixture = new NetnsFixture(name);
  }

  @Override
  public void beforeEach(ExtensionContext context) {
    fixture.beforeEach(context);
    thread();
  }

  /** The namespace, for {@code nft list} as the oracle. */
  Netns ns() {
    return fixture.ns();
  }

  /** The thread in the namespace, for what opens a client of its own. */
  NetnsThread thread() {
    return fixture.thread();
  }

  /** A client on {@link #thread()}, opened on first use (a test that opens its own needs none). */
  NftClient client() {
    if (client == null) {
      client = fixture.closeLater(NftClient.open(thread()));
    }
    return client;
  }

  /** {@code resource} (something the test opened on {@link #thread()}), closed after the test before the thread. */
  <T extends AutoCloseable> T closeLater(T resource) {
    return fixture.closeLater(resource);
  }

  @Override
  public void afterEach(ExtensionContext context) throws Exception {
    client = null;
    fixture.afterEach(context);
  }
}
