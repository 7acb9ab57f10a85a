package io.egressservice.informers;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.objects.EgressServices;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.ovn.k8s.v1.EgressService;

/**
 * The races between a backfill and the informers' own puts and removes, driven by hand: the stores are
 * called as fabric8's informer calls them, and the backfill's API calls wait for the test.
 */
class OptInCachesTest {
  static final Duration WAIT = Duration.ofSeconds(10);

  /** The backfill's fetch: signals that it was asked, then waits for the answer the test gives. */
  static final class HeldFetcher implements OptInCaches.Fetcher {
    final CountDownLatch asked = new CountDownLatch(1);
    final BlockingQueue<OptInCaches.Fetched> answers = new ArrayBlockingQueue<>(4);
    final AtomicInteger calls = new AtomicInteger();

    @Override
    public OptInCaches.Fetched fetch(String namespace, String name) {
      calls.incrementAndGet();
      asked.countDown();
      try {
        OptInCaches.Fetched f = answers.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
        if (f == null) {
          throw new IllegalStateException("no answer");
        }
        return f;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
    }
  }

  static final class Recorder<T extends HasMetadata> implements ResourceEventHandler<T> {
    final List<String> calls = new CopyOnWriteArrayList<>();

    private static String ref(HasMetadata o) {
      return o.getMetadata().getName() + "@" + o.getMetadata().getResourceVersion();
    }

    @Override
    public void onAdd(T obj) {
      calls.add("add " + ref(obj));
    }

    @Override
    public void onUpdate(T oldObj, T newObj) {
      calls.add("update " + ref(oldObj) + " -> " + ref(newObj));
    }

    @Override
    public void onDelete(T obj, boolean deletedFinalStateUnknown) {
      calls.add("delete " + ref(obj));
    }
  }

  final CacheEvents events = new CacheEvents("test-cache-events");
  final HeldFetcher fetcher = new HeldFetcher();
  final List<RuntimeException> failures = new CopyOnWriteArrayList<>();
  final OptInCaches caches = new OptInCaches(events, fetcher, failures::add);
  final Recorder<Service> services = new Recorder<>();
  final Recorder<EndpointSlice> slices = new Recorder<>();

  @AfterEach
  void close() {
    caches.close();
    events.close();
  }

  static Service service(String rv) {
    Service s = OptInInformersTest.service("default", "web", "172.30.0.10");
    s.getMetadata().setResourceVersion(rv);
    return s;
  }

  static EndpointSlice slice(String name, String rv) {
    EndpointSlice s = OptInInformersTest.slice("default", "web", name, "10.128.0.5");
    s.getMetadata().setResourceVersion(rv);
    return s;
  }

  static EgressService egressService() {
    EgressService es = EgressServices.of("default", "web", null, null, null);
    es.getMetadata().setResourceVersion("1");
    return es;
  }

  /** The informers list; then the EgressService arrives, and its backfill is asked for and held. */
  private void anEgressServiceArrivesAndItsBackfillIsHeld() throws InterruptedException {
    caches.register(caches.services, services);
    caches.register(caches.slices, slices);
    assertThat(caches.dependentsListing()).isTrue();
    caches.egressServices.put("default/web", egressService());
    assertThat(fetcher.asked.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
  }

  private void answer(OptInCaches.Fetched fetched) {
    fetcher.answers.add(fetched);
    await().atMost(WAIT).until(caches::backfillsDone);
  }

  /** Everything queued for the handlers before this has been delivered. */
  private void delivered() throws InterruptedException {
    CountDownLatch marker = new CountDownLatch(1);
    events.register(EndpointSlice.class, new ResourceEventHandler<EndpointSlice>() {
      @Override
      public void onAdd(EndpointSlice obj) {
        marker.countDown();
      }

      @Override
      public void onUpdate(EndpointSlice oldObj, EndpointSlice newObj) {}

      @Override
      public void onDelete(EndpointSlice obj, boolean deletedFinalStateUnknown) {}
    }, List.of(slice("marker", "0")));
    assertThat(marker.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
  }

  @Test
  void aBackfillBringsTheServiceAndItsSlicesAsAdds() throws InterruptedException {
    anEgressServiceArrivesAndItsBackfillIsHeld();
    answer(new OptInCaches.Fetched(Optional.of(service("5")), List.of(slice("web-a", "6"), slice("web-b", "7"))));
    delivered();

    assertThat(caches.services.get("default/web").getMetadata().getResourceVersion()).isEqualTo("5");
    assertThat(caches.slices.owned("default/web")).hasSize(2);
    assertThat(services.calls).containsExactly("add web@5");
    assertThat(slices.calls).containsExactlyInAnyOrder("add web-a@6", "add web-b@7");
  }

  @Test
  void aWatchUpdateBetweenTheGetAndThePutIsKept() throws InterruptedException {
    anEgressServiceArrivesAndItsBackfillIsHeld();
    caches.services.put("default/web", service("6"));
    caches.slices.put("default/web-a", slice("web-a", "8"));
    answer(new OptInCaches.Fetched(Optional.of(service("5")), List.of(slice("web-a", "7"))));
    delivered();

    assertThat(caches.services.get("default/web").getMetadata().getResourceVersion()).isEqualTo("6");
    assertThat(caches.slices.get("default/web-a").getMetadata().getResourceVersion()).isEqualTo("8");
    assertThat(services.calls).containsExactly("add web@6");
    assertThat(slices.calls).containsExactly("add web-a@8");
  }

  @Test
  void aDeleteThatOvertookTheBackfillDoesNotResurrectTheObject() throws InterruptedException {
    anEgressServiceArrivesAndItsBackfillIsHeld();
    // the GET and LIST were answered (rv 5, 6), then the watch delivered the deletes before the backfill applied
    caches.services.remove("default/web");
    caches.slices.remove("default/web-a");
    answer(new OptInCaches.Fetched(Optional.of(service("5")), List.of(slice("web-a", "6"), slice("web-b", "7"))));
    delivered();

    assertThat(caches.services.get("default/web")).isNull();
    assertThat(caches.slices.get("default/web-a")).isNull();
    assertThat(caches.slices.owned("default/web")).extracting(s -> s.getMetadata().getName()).containsExactly("web-b");
    assertThat(services.calls).isEmpty();
    assertThat(slices.calls).containsExactly("add web-b@7");
  }

  @Test
  void aBackfillOfAnEgressServiceDeletedMeanwhileIsDiscarded() throws InterruptedException {
    anEgressServiceArrivesAndItsBackfillIsHeld();
    caches.egressServices.remove("default/web");
    fetcher.answers.add(new OptInCaches.Fetched(Optional.of(service("5")), List.of(slice("web-a", "6"))));
    await().atMost(WAIT).until(() -> fetcher.answers.isEmpty());
    assertThat(caches.backfillsDone()).isTrue();
    delivered();

    assertThat(caches.services.size()).isZero();
    assertThat(caches.slices.size()).isZero();
    assertThat(services.calls).isEmpty();
    assertThat(slices.calls).isEmpty();
  }

  @Test
  void aFailedBackfillIsRetriedWhileItsEgressServiceExists() throws InterruptedException {
    OptInCaches.Fetcher failingOnce = new OptInCaches.Fetcher() {
      final AtomicInteger calls = new AtomicInteger();

      @Override
      public OptInCaches.Fetched fetch(String namespace, String name) {
        if (calls.getAndIncrement() == 0) {
          throw new IllegalStateException("connection refused");
        }
        return new OptInCaches.Fetched(Optional.of(service("5")), List.of());
      }
    };
    try (OptInCaches retrying = new OptInCaches(events, failingOnce, failures::add)) {
      retrying.dependentsListing();
      retrying.egressServices.put("default/web", egressService());
      await().atMost(WAIT).until(retrying::backfillsDone);
      assertThat(retrying.services.get("default/web")).isNotNull();
      assertThat(failures).extracting(Throwable::getMessage).containsExactly("connection refused");
    }
  }

  @Test
  void beforeTheServicesAreListedAnEgressServiceNeedsNoBackfillAndItsServiceIsKeptWhenListed()
      throws InterruptedException {
    caches.register(caches.services, services);
    caches.egressServices.put("default/web", egressService());
    assertThat(caches.backfillsDone()).isTrue();
    caches.dependentsListing();
    caches.services.put("default/web", service("5"));
    caches.services.put("default/other", OptInInformersTest.service("default", "other", "172.30.0.11"));
    delivered();

    assertThat(fetcher.calls.get()).isZero();
    assertThat(caches.services.keySet()).containsExactly("default/web");
    assertThat(services.calls).containsExactly("add web@5");
  }

  @Test
  void aSliceRelabelledAwayFromAnOptedInServiceLeavesTheCacheAndTheIndex() throws InterruptedException {
    caches.register(caches.slices, slices);
    caches.egressServices.put("default/web", egressService());
    caches.dependentsListing();
    caches.slices.put("default/web-a", slice("web-a", "5"));
    EndpointSlice moved = slice("web-a", "6");
    moved.getMetadata().getLabels().put("kubernetes.io/service-name", "other");
    caches.slices.put("default/web-a", moved);
    delivered();

    assertThat(caches.slices.size()).isZero();
    assertThat(caches.slices.owned("default/web")).isEmpty();
    assertThat(slices.calls).containsExactly("add web-a@5", "delete web-a@5");
  }
}
