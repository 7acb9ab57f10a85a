package io.egressservice.allocator;

import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.extended.leaderelection.resourcelock.LeaderElectionRecord;
import io.fabric8.kubernetes.client.extended.leaderelection.resourcelock.Lock;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * The Lease lock of the leader election, telling {@code observer} every record the elector reads: a follower learns
 * when the Lease will expire from reads the elector makes anyway, without a request of its own.
 */
final class ObservedLease implements Lock {
  private final Lock lock;
  private final Consumer<LeaderElectionRecord> observer;

  ObservedLease(Lock lock, Consumer<LeaderElectionRecord> observer) {
    this.lock = Objects.requireNonNull(lock);
    this.observer = Objects.requireNonNull(observer);
  }

  @Override
  public LeaderElectionRecord get(KubernetesClient client) {
    LeaderElectionRecord r = lock.get(client);
    if (r != null) {
      observer.accept(r);
    }
    return r;
  }

  @Override
  public void create(KubernetesClient client, LeaderElectionRecord record) {
    lock.create(client, record);
  }

  @Override
  public void update(KubernetesClient client, LeaderElectionRecord record) {
    lock.update(client, record);
  }

  @Override
  public String identity() {
    return lock.identity();
  }

  @Override
  public String describe() {
    return lock.describe();
  }
}
