package io.egressservice.testing;

import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/** Writes many objects to the test API server as fast as it takes them: four requests in flight at a time. */
public final class KubeWrites {
  private KubeWrites() {}

  /** Creates every object; each create must be done within {@code each}, or this throws. */
  public static void createAll(KubernetesClient client, List<? extends HasMetadata> objects, Duration each)
      throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (HasMetadata o : objects) {
        done.add(pool.submit(() -> client.resource(o).create()));
      }
      for (Future<?> f : done) {
        f.get(each.toMillis(), TimeUnit.MILLISECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
  }
}
