package io.egressservice.uninstall;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fabric8.kubernetes.api.model.StatusBuilder;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import io.fabric8.kubernetes.api.model.apps.DaemonSetBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The verdict at SIGTERM against the mock API server: remove what the process owns only when its DaemonSet is
 * deleted or being deleted, and was seen present; the watch's view counts when the GET is refused (an uninstall
 * deletes the RBAC right after the DaemonSet).
 */
@EnableKubernetesMockClient(crud = true)
class OwnerWatchTest {
  static final String NS = "egress-service-agent";
  static final String NAME = "egress-service-agent";
  static final String PATH = "/apis/apps/v1/namespaces/" + NS + "/daemonsets/" + NAME;
  static final Duration LIMIT = Duration.ofSeconds(2);

  KubernetesMockServer server;
  KubernetesClient client;
  OwnerWatch watch;

  @AfterEach
  void close() {
    if (watch != null) {
      watch.close();
    }
  }

  @Test
  void aPresentDaemonSetKeepsTheStateForTheNextAgent() {
    create(Optional.empty());
    watching(NAME);
    StopVerdict v = watch.atStop(LIMIT);
    assertThat(v.uninstall()).as(v.reason()).isFalse();
    assertThat(v.reason()).contains("is present (a GET at SIGTERM)");
  }

  @Test
  void aDeletedDaemonSetUninstalls() {
    create(Optional.empty());
    watching(NAME);
    awaitSeen(OwnerWatch.Seen.PRESENT);
    client.apps().daemonSets().inNamespace(NS).withName(NAME).delete();
    StopVerdict v = watch.atStop(LIMIT);
    assertThat(v.uninstall()).as(v.reason()).isTrue();
    assertThat(v.reason()).contains("is deleted (a GET at SIGTERM)");
  }

  @Test
  void aDaemonSetBeingDeletedInTheForegroundUninstalls() {
    create(Optional.of("foregroundDeletion"));
    watching(NAME);
    awaitSeen(OwnerWatch.Seen.PRESENT);
    client.apps().daemonSets().inNamespace(NS).withName(NAME).delete();
    assertThat(client.apps().daemonSets().inNamespace(NS).withName(NAME).get().getMetadata().getDeletionTimestamp())
        .as("the mock keeps an object with a finalizer, marked deleted").isNotNull();
    StopVerdict v = watch.atStop(LIMIT);
    assertThat(v.uninstall()).as(v.reason()).isTrue();
    assertThat(v.reason()).contains("is being deleted");
  }

  @Test
  void whenTheGetIsRefusedTheWatchsViewOfTheDeletionCounts() {
    create(Optional.empty());
    watching(NAME);
    awaitSeen(OwnerWatch.Seen.PRESENT);
    client.apps().daemonSets().inNamespace(NS).withName(NAME).delete();
    awaitSeen(OwnerWatch.Seen.GONE);
    refuseTheGet();
    StopVerdict v = watch.atStop(LIMIT);
    assertThat(v.uninstall()).as(v.reason()).isTrue();
    assertThat(v.reason()).contains("the watch");
  }

  @Test
  void whenTheGetIsRefusedAndTheWatchSawItPresentNothingIsRemoved() {
    create(Optional.empty());
    watching(NAME);
    awaitSeen(OwnerWatch.Seen.PRESENT);
    refuseTheGet();
    assertThat(watch.atStop(LIMIT).uninstall()).isFalse();
  }

  @Test
  void aDaemonSetNeverSeenPresentNeverUninstalls() {
    create(Optional.empty());
    watching("a-wrong-name"); // a misconfigured name must not turn each restart into an uninstall
    StopVerdict v = watch.atStop(LIMIT);
    assertThat(v.uninstall()).as(v.reason()).isFalse();
    assertThat(v.reason()).contains("never seen present");
  }

  @Test
  void aDaemonSetCreatedAgainAfterAnOrphaningDeleteAdoptsThePodAndNothingIsRemoved() {
    create(Optional.empty());
    watching(NAME);
    awaitSeen(OwnerWatch.Seen.PRESENT);
    client.apps().daemonSets().inNamespace(NS).withName(NAME).delete(); // --cascade=orphan: the pod runs on
    awaitSeen(OwnerWatch.Seen.GONE);
    create(Optional.empty());
    assertThat(watch.atStop(LIMIT).uninstall()).isFalse();
  }

  private void watching(String name) {
    watch = OwnerWatch.start(client, new Owner(Owner.Kind.DAEMONSET, NS, name));
  }

  private void awaitSeen(OwnerWatch.Seen seen) {
    await().atMost(Duration.ofSeconds(10)).until(() -> watch.latest() == seen);
  }

  private void refuseTheGet() {
    server.expect().get().withPath(PATH).andReturn(403, new StatusBuilder().withCode(403).withReason("Forbidden")
        .withMessage("daemonsets.apps \"" + NAME + "\" is forbidden").build()).always();
  }

  private void create(Optional<String> finalizer) {
    DaemonSetBuilder ds = new DaemonSetBuilder().withNewMetadata().withName(NAME).withNamespace(NS).endMetadata();
    finalizer.ifPresent(f -> ds.editMetadata().addToFinalizers(f).endMetadata());
    DaemonSet built = ds.build();
    client.apps().daemonSets().inNamespace(NS).resource(built).create();
  }
}
