package io.egressservice.testbed;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.ConfigMapBuilder;
import io.fabric8.kubernetes.api.model.ConfigMapList;
import io.fabric8.kubernetes.api.model.ListOptionsBuilder;
import io.fabric8.kubernetes.api.model.SecretBuilder;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.Watch;
import io.fabric8.kubernetes.client.Watcher;
import io.fabric8.kubernetes.client.WatcherException;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import io.fabric8.mockwebserver.http.RecordedRequest;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The test API server's watches behave as a real server's do during outages and churn: resumed from a
 * {@code resourceVersion} they replay exactly what changed since, a version older than the kept history is 410
 * Gone, bookmarks carry the latest version, and a watch opened while writes go on misses and repeats nothing.
 * Driven through fabric8's real client, watches and informers.
 */
class ApiServerWatchTest {
  static final String NS = "watch";

  private final Deque<AutoCloseable> closing = new ArrayDeque<>();
  private ExpiringWatchDispatcher dispatcher;
  private KubernetesMockServer server;
  private KubernetesClient client;

  private void start(int historySize, Duration bookmarkEvery) {
    dispatcher = later(new ExpiringWatchDispatcher(historySize, bookmarkEvery));
    server = new KubernetesMockServer(new Context(), new MockWebServer(), new HashMap<>(), dispatcher, false);
    server.init();
    closing.push(server::destroy);
    client = later(server.createClient());
  }

  private <T extends AutoCloseable> T later(T c) {
    closing.push(c);
    return c;
  }

  @AfterEach
  void close() throws Exception {
    while (!closing.isEmpty()) {
      closing.pop().close();
    }
  }

  private void create(String name) {
    client.configMaps().inNamespace(NS).resource(new ConfigMapBuilder()
        .withNewMetadata().withName(name).withNamespace(NS).endMetadata().addToData("k", name).build()).create();
  }

  private void delete(String name) {
    client.configMaps().inNamespace(NS).withName(name).delete();
  }

  private ConfigMapList list() {
    return client.configMaps().inNamespace(NS).list();
  }

  /** A watch's events as it got them; its end, if it ended. */
  static final class Recorder implements Watcher<ConfigMap> {
    record Seen(Action action, String name, long version) {
      @Override
      public String toString() {
        return action + " " + name;
      }
    }

    final List<Seen> seen = new CopyOnWriteArrayList<>();
    final CompletableFuture<WatcherException> ended = new CompletableFuture<>();

    @Override
    public void eventReceived(Action action, ConfigMap cm) {
      seen.add(new Seen(action, String.valueOf(cm.getMetadata().getName()),
          Long.parseLong(cm.getMetadata().getResourceVersion())));
    }

    @Override
    public void onClose(WatcherException cause) {
      ended.complete(cause);
    }

    List<String> names(Action action) {
      return seen.stream().filter(s -> s.action() == action).map(Seen::name).toList();
    }

    List<String> changes() {
      return seen.stream().filter(s -> s.action() != Action.BOOKMARK).map(Seen::toString).toList();
    }
  }

  private Recorder watchFrom(String version, boolean bookmarks) {
    Recorder r = new Recorder();
    later(client.configMaps().inNamespace(NS).watch(new ListOptionsBuilder().withResourceVersion(version)
        .withAllowWatchBookmarks(bookmarks).build(), r));
    return r;
  }

  @Test
  void aWatchResumedFromAVersionGetsWhatChangedSinceInOrderAndNothingElse() {
    start(ExpiringWatchDispatcher.DEFAULT_HISTORY, Duration.ofMinutes(1));
    create("a");
    create("b");
    create("c");
    String from = list().getMetadata().getResourceVersion();
    delete("a");
    create("d");

    Recorder r = watchFrom(from, false);
    await().atMost(Duration.ofSeconds(10)).until(() -> r.seen.size() >= 2);
    create("e"); // a live change after the replay: anything replayed late would come before it
    await().atMost(Duration.ofSeconds(10)).until(() -> r.names(Watcher.Action.ADDED).contains("e"));

    assertThat(r.changes()).as("the changes after %s, no ADDED for b and c", from)
        .containsExactly("DELETED a", "ADDED d", "ADDED e");
    List<Long> versions = r.seen.stream().map(Recorder.Seen::version).toList();
    assertThat(versions.get(0)).as("the delete's own version, after the one resumed from")
        .isGreaterThan(Long.parseLong(from));
    assertThat(versions).isSorted().doesNotHaveDuplicates();
  }

  @Test
  void aWatchFromNoVersionStartsWithEveryCurrentObjectThenWhatChanges() {
    start(ExpiringWatchDispatcher.DEFAULT_HISTORY, Duration.ofMinutes(1));
    create("a");
    create("b");
    delete("a");
    Recorder r = new Recorder();
    later(client.configMaps().inNamespace(NS).watch(r));
    await().atMost(Duration.ofSeconds(10)).until(() -> r.seen.size() >= 1);
    create("c");
    await().atMost(Duration.ofSeconds(10)).until(() -> r.names(Watcher.Action.ADDED).contains("c"));
    assertThat(r.changes()).containsExactly("ADDED b", "ADDED c");
  }

  @Test
  void aWatchFromBeforeTheKeptHistoryIsToldItIsGoneAndOneWithinItIsNot() throws Exception {
    start(3, Duration.ofMinutes(1));
    create("c0");
    String before = list().getMetadata().getResourceVersion();
    create("c1");
    String within = list().getMetadata().getResourceVersion(); // c2..c4 are the 3 kept changes after it
    for (int i = 2; i <= 4; i++) {
      create("c" + i);
    }

    Recorder old = watchFrom(before, false);
    WatcherException cause = old.ended.get(10, TimeUnit.SECONDS);
    assertThat(cause).isNotNull();
    assertThat(cause.isHttpGone()).as("410 Gone: %s", cause.getMessage()).isTrue();
    assertThat(old.seen).isEmpty();
    assertThat(dispatcher.goneAnswers()).isEqualTo(1);

    Recorder recent = watchFrom(within, false);
    await().atMost(Duration.ofSeconds(10)).until(() -> recent.seen.size() >= 3);
    assertThat(recent.changes()).containsExactly("ADDED c2", "ADDED c3", "ADDED c4");
    assertThat(recent.ended).isNotDone();
  }

  @Test
  void expiringTheHistoryAnswersEveryEarlierVersionGone() throws Exception {
    start(ExpiringWatchDispatcher.DEFAULT_HISTORY, Duration.ofMinutes(1));
    create("a");
    String before = list().getMetadata().getResourceVersion();
    dispatcher.expireHistory();
    String after = list().getMetadata().getResourceVersion();

    assertThat(watchFrom(before, false).ended.get(10, TimeUnit.SECONDS).isHttpGone()).isTrue();
    Recorder fresh = watchFrom(after, false);
    create("b");
    await().atMost(Duration.ofSeconds(10)).until(() -> fresh.changes().equals(List.of("ADDED b")));
  }

  @Test
  void aWatchAskingForBookmarksGetsTheLatestVersionAndOneNotAskingGetsNone() {
    start(ExpiringWatchDispatcher.DEFAULT_HISTORY, Duration.ofMillis(200));
    create("a");
    delete("a"); // none of its kind left: its bookmarks still name it
    String from = list().getMetadata().getResourceVersion();
    Recorder asking = watchFrom(from, true);
    Recorder notAsking = watchFrom(from, false);
    // a change to another kind: no event for these watches, but the latest version moves on
    client.secrets().inNamespace(NS).resource(new SecretBuilder().withNewMetadata().withName("s").endMetadata()
        .build()).create();
    long latest = Long.parseLong(list().getMetadata().getResourceVersion());
    assertThat(latest).isGreaterThan(Long.parseLong(from));

    await().atMost(Duration.ofSeconds(10)).until(() -> asking.seen.stream()
        .filter(s -> s.action() == Watcher.Action.BOOKMARK && s.version() == latest).count() >= 2);
    assertThat(asking.changes()).isEmpty();
    assertThat(notAsking.seen).as("two bookmark periods passed").isEmpty();
  }

  @Test
  void anInformerRecordsTheVersionItsBookmarksCarry() {
    start(ExpiringWatchDispatcher.DEFAULT_HISTORY, Duration.ofMillis(200));
    create("a");
    SharedIndexInformer<ConfigMap> informer = later(client.configMaps().inNamespace(NS).inform());
    await().atMost(Duration.ofSeconds(10)).until(informer::hasSynced);
    client.secrets().inNamespace(NS).resource(new SecretBuilder().withNewMetadata().withName("s").endMetadata()
        .build()).create();
    String latest = list().getMetadata().getResourceVersion();
    await().atMost(Duration.ofSeconds(10)).until(() -> latest.equals(informer.lastSyncResourceVersion()));
  }

  @Test
  void anInformerCutOffWhileAnObjectIsDeletedSeesTheDeleteWithoutRelisting() throws Exception {
    start(ExpiringWatchDispatcher.DEFAULT_HISTORY, Duration.ofSeconds(1));
    create("a");
    create("b");
    ApiProxy proxy = later(new ApiProxy(server.getPort()));
    KubernetesClient viaProxy = later(new KubernetesClientBuilder().withConfig(new ConfigBuilder(client.getConfiguration())
        .withMasterUrl(client.getMasterUrl().getProtocol() + "://127.0.0.1:" + proxy.port()).build()).build());
    List<String> deletes = new CopyOnWriteArrayList<>();
    SharedIndexInformer<ConfigMap> informer = later(viaProxy.configMaps().inNamespace(NS).inform(
        new ResourceEventHandler<>() {
          @Override
          public void onAdd(ConfigMap cm) {
          }

          @Override
          public void onUpdate(ConfigMap before, ConfigMap after) {
          }

          @Override
          public void onDelete(ConfigMap cm, boolean finalStateUnknown) {
            deletes.add(cm.getMetadata().getName() + (finalStateUnknown ? " (relist)" : ""));
          }
        }));
    await().atMost(Duration.ofSeconds(10)).until(informer::hasSynced);

    proxy.mode(ApiProxy.Mode.REFUSE); // the watch's connection is cut: the delete happens in the gap
    delete("a");
    create("c");
    proxy.mode(ApiProxy.Mode.PASS);

    await().atMost(Duration.ofSeconds(20)).untilAsserted(() ->
        assertThat(informer.getStore().list().stream().map(cm -> cm.getMetadata().getName()).sorted())
            .containsExactly("b", "c"));
    assertThat(deletes).as("told by the resumed watch, not found missing by a relist").containsExactly("a");
    assertThat(listRequests()).as("the informer's first list, none after").isEqualTo(1);
  }

  /** How many lists of ConfigMaps the server answered (watches and the test's own writes aside). */
  private long listRequests() throws InterruptedException {
    List<RecordedRequest> requests = new ArrayList<>();
    for (RecordedRequest r; (r = server.takeRequest(10, TimeUnit.MILLISECONDS)) != null; ) {
      requests.add(r);
    }
    return requests.stream().filter(r -> r.getMethod().equals("GET") && r.getPath().contains("/configmaps")
        && !r.getPath().contains("watch=true")).count();
  }

  @Test
  void watchesOpenedWhileWritesGoOnMissNothingAndRepeatNothing() throws Exception {
    start(ExpiringWatchDispatcher.DEFAULT_HISTORY, Duration.ofMinutes(1));
    int objects = 150;
    int watches = 10;
    Set<String> all = IntStream.range(0, objects).mapToObj(i -> "w" + i).collect(Collectors.toSet());
    AtomicInteger written = new AtomicInteger();
    CompletableFuture<Void> writer = CompletableFuture.runAsync(() -> IntStream.range(0, objects).forEach(i -> {
      create("w" + i);
      written.incrementAndGet();
    }));
    record Start(Set<String> listed, Recorder watch) {
    }
    List<Start> starts = new ArrayList<>();
    for (int k = 0; k < watches; k++) {
      int step = k;
      await().atMost(Duration.ofSeconds(20)).until(() -> written.get() >= step * objects / watches);
      ConfigMapList l = list();
      Set<String> listed = l.getItems().stream().map(cm -> cm.getMetadata().getName()).collect(Collectors.toSet());
      starts.add(new Start(listed, watchFrom(l.getMetadata().getResourceVersion(), false)));
    }
    writer.get(30, TimeUnit.SECONDS);

    assertThat(starts.stream().filter(s -> s.listed().size() > 0 && s.listed().size() < objects).count())
        .as("watches opened while the writes went on").isPositive();
    for (Start s : starts) {
      await().atMost(Duration.ofSeconds(20))
          .until(() -> s.listed().size() + s.watch().seen.size() >= objects);
      List<String> added = s.watch().names(Watcher.Action.ADDED);
      assertThat(added).doesNotHaveDuplicates().doesNotContainAnyElementsOf(s.listed());
      Set<String> union = new HashSet<>(s.listed());
      union.addAll(added);
      assertThat(union).isEqualTo(all);
      assertThat(s.watch().seen).hasSize(added.size());
    }
  }
}
