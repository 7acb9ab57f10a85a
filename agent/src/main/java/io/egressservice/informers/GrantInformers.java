package io.egressservice.informers;

import io.egressservice.objects.GrantObjects;
import io.egressservice.objects.PolicyDecoding;
import io.egressservice.plan.GrantPolicy;
import io.egressservice.plan.NamespaceInfo;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.Namespace;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * What the grants are read from, watched only while {@code --egress-service-policy=enforce}: the Namespaces (only
 * their labels are kept) and the EgressServicePolicies (only the one named {@code cluster} counts; it is decoded
 * tolerantly, {@link PolicyDecoding}). Listeners hear a Namespace whose labels changed and every change of the
 * policy, as the plan reads them.
 */
public final class GrantInformers implements AutoCloseable {
  /** Told what changed; called on the informers' threads. */
  public interface Listener {
    void namespace(NamespaceInfo ns, boolean deleted);

    void policy(GrantPolicy policy);
  }

  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(GrantInformers.class);

  static final ResourceDefinitionContext POLICY = new ResourceDefinitionContext.Builder()
      .withGroup(PolicyDecoding.GROUP).withVersion(PolicyDecoding.VERSION).withKind(PolicyDecoding.KIND)
      .withPlural(PolicyDecoding.PLURAL).withNamespaced(false).build();

  private final SharedIndexInformer<Namespace> namespaces;
  private final SharedIndexInformer<GenericKubernetesResource> policies;
  private final Map<String, NamespaceInfo> labels = new ConcurrentHashMap<>();
  private volatile GrantPolicy policy = GrantPolicy.off().enforced(true);
  private final List<Listener> listeners = new CopyOnWriteArrayList<>();

  GrantInformers(KubernetesClient client) {
    namespaces = client.namespaces().runnableInformer(0);
    policies = client.genericKubernetesResources(POLICY).runnableInformer(0);
    namespaces.exceptionHandler((started, e) -> {
      LOG.warn("watching Namespaces (for the EgressServicePolicy's grants): {}", e.toString());
      return true;
    });
    policies.exceptionHandler((started, e) -> {
      LOG.warn("watching EgressServicePolicies: {}", e.toString());
      return true;
    });
    namespaces.addEventHandler(new ResourceEventHandler<>() {
      @Override
      public void onAdd(Namespace ns) {
        put(PolicyDecoding.namespace(ns));
      }

      @Override
      public void onUpdate(Namespace before, Namespace after) {
        put(PolicyDecoding.namespace(after));
      }

      @Override
      public void onDelete(Namespace ns, boolean finalStateUnknown) {
        NamespaceInfo gone = PolicyDecoding.namespace(ns);
        if (labels.remove(gone.name()) != null) {
          listeners.forEach(l -> l.namespace(gone, true));
        }
      }
    });
    policies.addEventHandler(new ResourceEventHandler<>() {
      @Override
      public void onAdd(GenericKubernetesResource p) {
        policyChanged(p, false);
      }

      @Override
      public void onUpdate(GenericKubernetesResource before, GenericKubernetesResource after) {
        policyChanged(after, false);
      }

      @Override
      public void onDelete(GenericKubernetesResource p, boolean finalStateUnknown) {
        policyChanged(p, true);
      }
    });
  }

  private void put(NamespaceInfo ns) {
    NamespaceInfo before = labels.put(ns.name(), ns);
    if (!ns.equals(before)) {
      listeners.forEach(l -> l.namespace(ns, false));
    }
  }

  private void policyChanged(GenericKubernetesResource p, boolean deleted) {
    if (!GrantPolicy.NAME.equals(p.getMetadata().getName())) {
      return;
    }
    GrantPolicy next = (deleted ? GrantPolicy.off() : PolicyDecoding.policy(p)).enforced(true);
    if (!next.equals(policy)) {
      policy = next;
      listeners.forEach(l -> l.policy(next));
    }
  }

  public void addListener(Listener l) {
    listeners.add(l);
  }

  /** The policy as now read, enforced. */
  public GrantPolicy policy() {
    return policy;
  }

  /** The labels of namespace {@code name}: only its name label while its Namespace is not known. */
  public NamespaceInfo namespace(String name) {
    NamespaceInfo ns = labels.get(name);
    return ns != null ? ns : NamespaceInfo.named(name);
  }

  /** The policy and every Namespace known now. */
  public GrantObjects snapshot() {
    return new GrantObjects(policy, new ArrayList<>(labels.values()));
  }

  void start() {
    namespaces.start();
    policies.start();
  }

  boolean hasSynced() {
    return namespaces.hasSynced() && policies.hasSynced();
  }

  boolean watching() {
    return namespaces.isWatching() && policies.isWatching();
  }

  @Override
  public void close() {
    namespaces.close();
    policies.close();
  }
}
