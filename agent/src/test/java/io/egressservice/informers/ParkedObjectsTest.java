package io.egressservice.informers;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.objects.EgressServices;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.ovn.k8s.v1.EgressService;

/**
 * The Service and slices of an EgressService that left are parked for a while, kept current by the watches and
 * hidden from readers, so that one coming back at once needs no request (the stores driven as fabric8's informer
 * drives them, the clock by hand).
 */
class ParkedObjectsTest {
  static final Duration WAIT = Duration.ofSeconds(10);

  final AtomicInteger fetches = new AtomicInteger();
  final AtomicLong now = new AtomicLong(1_000_000_000L);
  final CacheEvents events = new CacheEvents("test-cache-events");
  final OptInCaches caches = new OptInCaches(events, (ns, name) -> {
    fetches.incrementAndGet();
    return new OptInCaches.Fetched(Optional.of(service("9")), List.of(slice("web-a", "9")));
  }, e -> { }, now::get);
  final OptInCachesTest.Recorder<Service> services = new OptInCachesTest.Recorder<>();
  final OptInCachesTest.Recorder<EndpointSlice> slices = new OptInCachesTest.Recorder<>();
  final List<String> all = new CopyOnWriteArrayList<>();

  static Service service(String rv) {
    return OptInCachesTest.service(rv);
  }

  static EndpointSlice slice(String name, String rv) {
    return OptInCachesTest.slice(name, rv);
  }

  static EgressService egressService(String rv) {
    EgressService es = EgressServices.of("default", "web", null, null, null);
    es.getMetadata().setResourceVersion(rv);
    return es;
  }

  /** The informers listed the EgressService, its Service and two slices. */
  @BeforeEach
  void listed() {
    caches.register(caches.services, services);
    caches.register(caches.slices, slices);
    caches.egressServices.put("default/web", egressService("1"));
    assertThat(caches.dependentsListing()).isTrue();
    caches.services.put("default/web", service("2"));
    caches.slices.put("default/web-a", slice("web-a", "3"));
    caches.slices.put("default/web-b", slice("web-b", "4"));
    await().atMost(WAIT).until(() -> slices.calls.size() == 2);
  }

  @AfterEach
  void close() {
    caches.close();
    events.close();
  }

  @Test
  void anEgressServiceReCreatedAtOnceFindsItsServiceAndSlicesWithoutARequest() {
    caches.egressServices.remove("default/web");
    assertThat(caches.services.get("default/web")).as("hidden while parked").isNull();
    assertThat(caches.slices.owned("default/web")).isEmpty();
    assertThat(caches.services.visible()).isEmpty();

    caches.egressServices.put("default/web", egressService("5"));

    assertThat(caches.services.get("default/web").getMetadata().getResourceVersion()).isEqualTo("2");
    assertThat(caches.slices.owned("default/web")).hasSize(2);
    await().atMost(WAIT).until(() -> slices.calls.size() == 6);
    assertThat(slices.calls).containsExactly("add web-a@3", "add web-b@4", "delete web-a@3", "delete web-b@4",
        "add web-a@3", "add web-b@4");
    assertThat(services.calls).containsExactly("add web@2", "delete web@2", "add web@2");
    assertThat(fetches).as("no backfill").hasValue(0);
    assertThat(caches.parkedCount()).isZero();
  }

  @Test
  void whileParkedTheWatchesKeepTheObjectsCurrentAndNothingIsAnnounced() {
    caches.egressServices.remove("default/web");
    caches.services.put("default/web", service("6"));
    caches.slices.remove("default/web-b");
    caches.slices.put("default/web-c", slice("web-c", "7"));
    assertThat(caches.services.get("default/web")).isNull();

    caches.egressServices.put("default/web", egressService("8"));

    assertThat(caches.services.get("default/web").getMetadata().getResourceVersion()).isEqualTo("6");
    assertThat(caches.slices.owned("default/web")).extracting(s -> s.getMetadata().getName())
        .containsExactlyInAnyOrder("web-a", "web-c");
    await().atMost(WAIT).until(() -> slices.calls.size() == 6);
    assertThat(slices.calls.subList(2, 6)).containsExactlyInAnyOrder("delete web-a@3", "delete web-b@4",
        "add web-a@3", "add web-c@7");
    assertThat(fetches).hasValue(0);
  }

  @Test
  void aRelistWhileParkedRemovesWhatWasDeletedMeanwhile() {
    caches.egressServices.remove("default/web");
    // fabric8's relist: it puts what it listed, then removes every key of values() that the list did not have
    assertThat(caches.slices.keySet()).contains("default/web-a", "default/web-b");
    caches.slices.values().filter(s -> s.getMetadata().getName().equals("web-b")).toList()
        .forEach(s -> caches.slices.remove(caches.slices.getKey(s)));

    caches.egressServices.put("default/web", egressService("5"));

    assertThat(caches.slices.owned("default/web")).extracting(s -> s.getMetadata().getName())
        .containsExactly("web-a");
  }

  @Test
  void afterTheGraceParkedObjectsAreForgottenAndAReturnFetchesThem() {
    caches.egressServices.remove("default/web");
    now.addAndGet(OptInCaches.PARKING.toNanos());
    caches.sweep();
    assertThat(caches.parkedCount()).isZero();
    assertThat(caches.services.size()).isZero();
    assertThat(caches.slices.size()).isZero();

    caches.egressServices.put("default/web", egressService("5"));

    await().atMost(WAIT).until(caches::backfillsDone);
    assertThat(fetches).hasValue(1);
    assertThat(caches.services.get("default/web").getMetadata().getResourceVersion()).isEqualTo("9");
  }
}
