package io.egressservice.admission;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.MissingNode;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What a ValidatingAdmissionPolicy sees of one request: who sends it, what it does to which resource, and the
 * objects (missing where Kubernetes passes null: oldObject on CREATE, namespaceObject of a cluster-scoped one).
 */
public record AdmissionRequest(String username, String operation, String group, String resource,
    String subResource, JsonNode object, JsonNode oldObject, JsonNode namespaceObject) {

  public static AdmissionRequest create(String username, String group, String resource, JsonNode object,
      JsonNode namespaceObject) {
    return new AdmissionRequest(username, "CREATE", group, resource, "", object, MissingNode.getInstance(),
        namespaceObject);
  }

  public static AdmissionRequest update(String username, String group, String resource, JsonNode oldObject,
      JsonNode object, JsonNode namespaceObject) {
    return new AdmissionRequest(username, "UPDATE", group, resource, "", object, oldObject, namespaceObject);
  }

  /** The same request on a subresource (nodes/status, egressservices/status). */
  public AdmissionRequest onSubResource(String name) {
    return new AdmissionRequest(username, operation, group, resource, name, object, oldObject, namespaceObject);
  }

  /** The {@code request} variable: the fields of admission.k8s.io/v1 AdmissionRequest the policies use. */
  Map<String, Object> asVariable() {
    Map<String, Object> request = new LinkedHashMap<>();
    request.put("operation", operation);
    request.put("userInfo", Map.of("username", username));
    request.put("resource", Map.of("group", group, "resource", resource));
    request.put("subResource", subResource);
    request.put("name", object.path("metadata").path("name").asText(oldObject.path("metadata").path("name").asText()));
    request.put("namespace", object.path("metadata").path("namespace").asText(""));
    return request;
  }
}
