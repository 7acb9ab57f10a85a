package io.egressservice.cli;

import io.egressservice.controller.AgentSerialization;
import io.egressservice.informers.ResponseBodyDeadline;
import io.egressservice.informers.SilentWatches;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** The API client of {@code run} and {@code allocator}. */
final class KubeClients {
  private KubeClients() {}

  /** Whether an API is at hand without looking further: {@code kubeconfig} given, or running in a pod. */
  static boolean givenOrInCluster(Path kubeconfig) {
    return kubeconfig != null || System.getenv("KUBERNETES_SERVICE_HOST") != null;
  }

  /** Every client of the agent bounds the bodies of its responses, not only their headers. */
  private static KubernetesClientBuilder builder() {
    return ResponseBodyDeadline.installOn(AgentSerialization.clientBuilder());
  }

  /**
   * From {@code kubeconfig}, or (null) the in-cluster configuration, then ~/.kube/config; a client that does
   * not load fabric8's whole model on its first watch event (see AgentSerialization) and does not wait forever
   * for a response's body (see ResponseBodyDeadline).
   */
  static KubernetesClient create(Path kubeconfig) {
    return create(kubeconfig, builder());
  }

  /**
   * As {@link #create(Path)}, for a long-running process: every watch that stays silent is re-opened on a new
   * connection, and a 410 on a watch's handshake lists again (see SilentWatches).
   */
  static KubernetesClient create(Path kubeconfig, SilentWatches watches) {
    return create(kubeconfig, watches.installOn(builder()));
  }

  private static KubernetesClient create(Path kubeconfig, KubernetesClientBuilder builder) {
    if (kubeconfig == null) {
      return builder.build();
    }
    try {
      return builder.withConfig(Config.fromKubeconfig(Files.readString(kubeconfig))).build();
    } catch (IOException | RuntimeException e) {
      throw new Main.UserError("cannot use --kubeconfig " + kubeconfig + ": "
          + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage()) + " (is it a kubeconfig file?)");
    }
  }
}
