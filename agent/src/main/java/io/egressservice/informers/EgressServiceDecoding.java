package io.egressservice.informers;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.BeanDescription;
import com.fasterxml.jackson.databind.DeserializationConfig;
import com.fasterxml.jackson.databind.DeserializationContext;
import com.fasterxml.jackson.databind.JsonDeserializer;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.Module;
import com.fasterxml.jackson.databind.deser.BeanDeserializerModifier;
import com.fasterxml.jackson.databind.deser.std.DelegatingDeserializer;
import com.fasterxml.jackson.databind.exc.InvalidFormatException;
import com.fasterxml.jackson.databind.module.SimpleModule;
import io.egressservice.objects.MalformedEgressService;
import io.fabric8.kubernetes.api.model.ObjectMeta;
import java.io.IOException;
import java.util.Arrays;
import java.util.stream.Collectors;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceSpec;
import org.ovn.k8s.v1.EgressServiceStatus;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads EgressServices so that one that does not fit the model is refused alone. Without it, an object whose
 * spec fails the CRD's schema ({@code sourceIPBy: Bogus}) fails the whole list or watch response: fabric8's
 * informer then relists forever, never synced after a restart (so never ready), and no later EgressService
 * is seen. Here such an object becomes a {@link MalformedEgressService}: its metadata and status, and what was
 * wrong, which the plan and the allocator refuse with that reason. An object without readable metadata
 * still fails, as it cannot be named.
 */
public final class EgressServiceDecoding {
  private static final Logger LOG = LoggerFactory.getLogger(EgressServiceDecoding.class);

  private EgressServiceDecoding() {}

  /** The Jackson module to register on the client's ObjectMapper. */
  public static Module module() {
    SimpleModule module = new SimpleModule("egress-service-tolerant-decoding");
    module.setDeserializerModifier(new BeanDeserializerModifier() {
      @Override
      public JsonDeserializer<?> modifyDeserializer(DeserializationConfig config, BeanDescription description,
          JsonDeserializer<?> deserializer) {
        return description.getBeanClass() == EgressService.class ? new Tolerant(deserializer) : deserializer;
      }
    });
    return module;
  }

  private static final class Tolerant extends DelegatingDeserializer {
    private static final long serialVersionUID = 1L;

    Tolerant(JsonDeserializer<?> delegate) {
      super(delegate);
    }

    @Override
    protected JsonDeserializer<?> newDelegatingInstance(JsonDeserializer<?> newDelegatee) {
      return new Tolerant(newDelegatee);
    }

    @Override
    public Object deserialize(JsonParser p, DeserializationContext ctxt) throws IOException {
      JsonNode tree = ctxt.readTree(p);
      try {
        return _delegatee.deserialize(parserOf(tree, p, ctxt), ctxt);
      } catch (JsonMappingException e) {
        JsonNode metadata = tree.path("metadata");
        if (!metadata.isObject() || metadata.path("name").asText("").isEmpty()) {
          throw e;
        }
        MalformedEgressService malformed = new MalformedEgressService(describe(e));
        malformed.setMetadata(ctxt.readTreeAsValue(metadata, ObjectMeta.class));
        try {
          if (tree.path("status").isObject()) {
            malformed.setStatus(ctxt.readTreeAsValue(tree.get("status"), EgressServiceStatus.class));
          }
        } catch (JsonMappingException statusUnreadable) {
          // status is not needed to refuse the object
        }
        LOG.warn("EgressService {}/{} (resourceVersion {}) is malformed and refused on its own: {}",
            malformed.getMetadata().getNamespace(), malformed.getMetadata().getName(),
            malformed.getMetadata().getResourceVersion(), malformed.problem());
        return malformed;
      }
    }

    private static JsonParser parserOf(JsonNode tree, JsonParser original, DeserializationContext ctxt)
        throws IOException {
      JsonParser p = tree.traverse(original.getCodec());
      JsonToken first = p.nextToken();
      if (first == null) {
        throw JsonMappingException.from(ctxt, "empty EgressService");
      }
      return p;
    }
  }

  /** "spec.sourceIPBy: 'Bogus' is not one of LoadBalancerIP, Network", "spec.nodeSelector: ...". */
  static String describe(JsonMappingException e) {
    StringBuilder path = new StringBuilder();
    for (JsonMappingException.Reference ref : e.getPath()) {
      if (ref.getFieldName() != null) {
        if (path.length() > 0) {
          path.append('.');
        }
        path.append(ref.getFieldName());
      } else if (ref.getIndex() >= 0) {
        path.append('[').append(ref.getIndex()).append(']');
      }
    }
    String where = path.length() == 0 ? "(object)" : path.toString();
    if (e instanceof InvalidFormatException ife && ife.getTargetType() != null && ife.getTargetType().isEnum()) {
      String allowed = Arrays.stream(ife.getTargetType().getEnumConstants())
          .map(c -> c instanceof EgressServiceSpec.SourceIPBy s ? s.getValue() : c.toString())
          .collect(Collectors.joining(", "));
      return where + ": '" + ife.getValue() + "' is not one of " + allowed;
    }
    String message = e.getOriginalMessage() == null ? e.getClass().getSimpleName() : e.getOriginalMessage();
    int nl = message.indexOf('\n');
    return where + ": " + (nl < 0 ? message : message.substring(0, nl));
  }
}
