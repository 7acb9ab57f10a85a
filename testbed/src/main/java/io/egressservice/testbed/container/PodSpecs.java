package io.egressservice.testbed.container;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Path;
import java.util.Map;

/**
 * What the control plane and the kubelet make of a workload's pod template before a container runtime sees it, and
 * nothing else: the Pod's name, uid and node; each {@code fieldRef} of the downward API filled with its value; the
 * ServiceAccount admission's token volume (token, ca.crt, namespace at {@code
 * /var/run/secrets/kubernetes.io/serviceaccount}, read-only); {@code KUBERNETES_SERVICE_HOST} and {@code _PORT}; Secret
 * volumes as the directories the kubelet writes them to. Two changes podman 4.3's {@code kube play} needs: the
 * containers' {@code ports} are left out (podman makes port mappings of them, which it refuses with host networking
 * or a given namespace; without hostPort, Kubernetes maps nothing and they only name the ports), and
 * the probes are left out (it would turn them into commands run inside the image, which has no shell; {@link Kubelet}
 * runs them from the node instead, as the kubelet does). Command, args, env values, securityContext, resources and
 * every other volume stay exactly as rendered.
 */
final class PodSpecs {
  static final String SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";
  private static final JsonNodeFactory JSON = JsonNodeFactory.instance;

  /** Where the pod runs and what the API and kubelet know of it. */
  record Placement(String podName, String namespace, String uid, String nodeName, String hostIp, String podIp,
      String apiHost, int apiPort, Path serviceAccountDir, Map<String, Path> secretDirs) {}

  private PodSpecs() {}

  /** The Pod {@code kube play} runs for {@code template} (a workload's {@code spec.template}), placed as {@code at} says. */
  static ObjectNode pod(JsonNode template, Placement at) {
    ObjectNode spec = template.path("spec").deepCopy();
    ObjectNode pod = JSON.objectNode().put("apiVersion", "v1").put("kind", "Pod");
    ObjectNode meta = pod.putObject("metadata").put("name", at.podName()).put("namespace", at.namespace())
        .put("uid", at.uid());
    if (template.path("metadata").has("labels")) {
      meta.set("labels", template.path("metadata").path("labels").deepCopy());
    }
    if (template.path("metadata").has("annotations")) {
      meta.set("annotations", template.path("metadata").path("annotations").deepCopy());
    }
    spec.put("nodeName", at.nodeName());
    boolean hostNetwork = spec.path("hostNetwork").asBoolean(false);
    boolean automount = spec.path("automountServiceAccountToken").asBoolean(true);
    ArrayNode volumes = spec.has("volumes") ? (ArrayNode) spec.get("volumes") : spec.putArray("volumes");
    for (JsonNode v : volumes) {
      if (v.has("secret")) {
        String secret = v.path("secret").path("secretName").asText();
        Path dir = at.secretDirs().get(secret);
        if (dir == null) {
          throw new IllegalArgumentException("volume " + v.path("name").asText() + ": no Secret " + secret
              + " in the API (the kubelet would keep the pod ContainerCreating)");
        }
        ObjectNode o = (ObjectNode) v;
        o.remove("secret");
        o.putObject("hostPath").put("path", dir.toString()).put("type", "Directory");
      }
    }
    if (automount) {
      volumes.addObject().put("name", "kube-api-access").putObject("hostPath")
          .put("path", at.serviceAccountDir().toString()).put("type", "Directory");
    }
    for (JsonNode c : spec.path("containers")) {
      ObjectNode container = (ObjectNode) c;
      ArrayNode env = container.has("env") ? (ArrayNode) container.get("env") : container.putArray("env");
      for (JsonNode e : env) {
        JsonNode ref = e.path("valueFrom").path("fieldRef");
        if (!ref.isMissingNode()) {
          ObjectNode o = (ObjectNode) e;
          o.remove("valueFrom");
          o.put("value", field(ref.path("fieldPath").asText(), at, spec));
        }
      }
      env.addObject().put("name", "KUBERNETES_SERVICE_HOST").put("value", at.apiHost());
      env.addObject().put("name", "KUBERNETES_SERVICE_PORT").put("value", Integer.toString(at.apiPort()));
      if (automount) {
        ArrayNode mounts = container.has("volumeMounts") ? (ArrayNode) container.get("volumeMounts")
            : container.putArray("volumeMounts");
        mounts.addObject().put("name", "kube-api-access").put("mountPath", SERVICE_ACCOUNT_DIR).put("readOnly", true);
      }
      container.remove("livenessProbe");
      container.remove("readinessProbe");
      container.remove("startupProbe");
      for (JsonNode p : container.path("ports")) {
        if (p.has("hostPort") && !hostNetwork) {
          throw new IllegalArgumentException("container " + container.path("name").asText() + " asks for hostPort "
              + p.path("hostPort").asInt() + ", which the testbed's pods cannot have");
        }
      }
      container.remove("ports");
    }
    pod.set("spec", spec);
    return pod;
  }

  /** The downward API's value of {@code fieldPath}, as the kubelet resolves it. */
  static String field(String fieldPath, Placement at, JsonNode spec) {
    return switch (fieldPath) {
      case "metadata.name" -> at.podName();
      case "metadata.namespace" -> at.namespace();
      case "metadata.uid" -> at.uid();
      case "spec.nodeName" -> at.nodeName();
      case "spec.serviceAccountName" -> spec.path("serviceAccountName").asText("default");
      case "status.hostIP" -> at.hostIp();
      case "status.podIP" -> at.podIp();
      default -> throw new IllegalArgumentException("fieldRef " + fieldPath + " is not one the testbed's kubelet fills");
    };
  }

  /** The container port named {@code name} (a probe's {@code port: metrics}), or the number itself. */
  static int port(JsonNode container, JsonNode port) {
    if (port.isInt()) {
      return port.asInt();
    }
    for (JsonNode p : container.path("ports")) {
      if (p.path("name").asText().equals(port.asText())) {
        return p.path("containerPort").asInt();
      }
    }
    throw new IllegalArgumentException("container " + container.path("name").asText() + " has no port named "
        + port.asText() + " (the kubelet would fail this probe)");
  }
}
