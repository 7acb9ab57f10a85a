package io.egressservice.dataplane;

import io.egressservice.kernel.Kernel;
import io.egressservice.kernel.Nftables;
import io.egressservice.kernel.NftException;
import io.egressservice.nft.NoHostNftables;
import io.egressservice.plan.DesiredState;
import java.util.Map;
import java.util.Optional;

/**
 * Keeps the no-host table ({@code --no-host=drop}, see {@link NoHostNftables}) in step with the plan: written whole
 * by a full reconcile when the held endpoints changed, by element on the fast path. Its rewrite (during endpoint
 * churn, with every SNAT change) moves the nftables generation, so every write tells {@code otherTableCommitted}:
 * without that the SNAT and mark caches would list our table again on the next reconcile.
 */
final class NoHostSync implements AutoCloseable {
  /** The table is listed (to repair a deleted one) at most this often; otherwise written on change only. */
  private static final long VERIFY_NANOS = 30_000_000_000L;

  private final Nftables client;
  private final NoHostNftables table;
  private final Runnable otherTableCommitted;
  /** The table's inputs as last synced; null before the first reconcile (the fast path then falls back). */
  private NoHostInputs inputs;
  private long lastVerifyNanos = System.nanoTime() - VERIFY_NANOS;

  NoHostSync(Kernel kernel, Runnable otherTableCommitted) {
    this.client = kernel.openNftables();
    this.table = new NoHostNftables(client);
    this.otherTableCommitted = otherTableCommitted;
  }

  /** Whether the inputs of the last sync are known (the fast path can update by element). */
  boolean current() {
    return inputs != null;
  }

  /** After a full reconcile at {@code nowNanos}: the table for {@code desired}; a failure's description, or empty. */
  Optional<String> sync(DesiredState desired, long nowNanos) {
    boolean verify = nowNanos - lastVerifyNanos >= VERIFY_NANOS;
    try {
      inputs = null;
      NoHostInputs next = NoHostInputs.of(desired);
      write(next, verify);
      inputs = next;
      otherTableCommitted.run();
      if (verify) {
        lastVerifyNanos = nowNanos;
      }
      return Optional.empty();
    } catch (NftException | IllegalStateException e) {
      return Optional.of(failure(e));
    }
  }

  /**
   * After the fast path from the changed services' slice {@code was} to {@code now}: element updates, or the whole
   * table when holds or the guard moved; a failure's description, or empty.
   */
  Optional<String> syncChanged(DesiredState was, DesiredState now) {
    NoHostInputs known = inputs;
    inputs = null;
    try {
      NoHostInputs.Delta d = known.update(was, now);
      if (d.reshaped() || !table.updateElements(d.lbAdded(), d.lbRemoved(), d.oursAdded(), d.oursRemoved())) {
        write(known, false);
      }
      otherTableCommitted.run();
      inputs = known;
      return Optional.empty();
    } catch (NftException | IllegalStateException e) {
      return Optional.of(failure(e));
    }
  }

  private void write(NoHostInputs in, boolean verify) {
    table.sync(in.holds(), in.inCluster(), in.lbIps(), in.ours(), in.guard(), verify);
  }

  private static String failure(RuntimeException e) {
    return "nft table inet " + NoHostNftables.TABLE + " (--no-host=drop): " + e.getMessage();
  }

  /** Packets of endpoints of services without a host dropped, per service ({@code namespace/name}). */
  Map<String, Long> droppedPackets() {
    try {
      return table.droppedPackets();
    } catch (NftException | IllegalStateException e) {
      return Map.of();
    }
  }

  /** Deletes the table; false when there was none. */
  boolean delete() {
    boolean present = client.tablePresent("inet", NoHostNftables.TABLE);
    if (present) {
      table.delete();
    }
    return present;
  }

  @Override
  public void close() {
    client.close();
  }
}
