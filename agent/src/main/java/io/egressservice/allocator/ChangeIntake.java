package io.egressservice.allocator;

import io.egressservice.informers.ClusterInformers;
import io.egressservice.objects.PlanInputs;
import io.egressservice.model.ObjectRef;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import java.util.Iterator;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.ovn.k8s.v1.EgressService;

/**
 * The allocator's intake of changes: handlers on the informers of EgressService, Service, EndpointSlice and Node
 * note what a change touches (handler threads) and ask for a pass; the worker takes the notes when the pass starts.
 * An event of an object no EgressService refers to (a Service or slice of another name) costs a map lookup and asks
 * for nothing.
 */
final class ChangeIntake {
  private final AllocatorObjects objects;
  private final Runnable requestPass;
  private final Runnable probeTargetsChanged;
  /** EgressServices a change touched since the last pass (handler threads add, the worker drains). */
  private final Set<ObjectRef> touched = ConcurrentHashMap.newKeySet();
  /** A Node changed, or the probes' verdict on one. */
  private final AtomicBoolean nodesChanged = new AtomicBoolean();
  /** The next pass decides everything from the caches. */
  private final AtomicBoolean fullNeeded = new AtomicBoolean(true);

  /**
   * @param requestPass asks the worker for a pass
   * @param probeTargetsChanged a Node or an EgressService changed: the hosts to probe may have too
   */
  ChangeIntake(AllocatorObjects objects, Runnable requestPass, Runnable probeTargetsChanged) {
    this.objects = objects;
    this.requestPass = requestPass;
    this.probeTargetsChanged = probeTargetsChanged;
  }

  /** Registers the handlers, through the informers' own registration (which also delivers backfilled objects). */
  void register(ClusterInformers informers) {
    listen(informers, EgressService.class, egressServiceEvents());
    listen(informers, Service.class, serviceEvents());
    listen(informers, EndpointSlice.class, sliceEvents());
    listen(informers, Node.class, nodeEvents());
  }

  private static <T extends HasMetadata> void listen(ClusterInformers informers, Class<T> kind,
      ResourceEventHandler<T> handler) {
    informers.addEventHandler(kind, handler);
  }

  /**
   * A resync delivers every cached object again as an update of itself: the allocator's own periodic full pass
   * stands for it, so those updates are ignored.
   */
  private static boolean resync(Object before, Object after) {
    return before == after;
  }

  private ResourceEventHandler<EgressService> egressServiceEvents() {
    return new ResourceEventHandler<>() {
      @Override
      public void onAdd(EgressService es) {
        touch(PlanInputs.ref(es));
      }

      @Override
      public void onUpdate(EgressService before, EgressService after) {
        if (!resync(before, after)) {
          touch(PlanInputs.ref(after));
        }
      }

      @Override
      public void onDelete(EgressService es, boolean finalStateUnknown) {
        touch(PlanInputs.ref(es));
      }

      @Override
      public void onNothing() {
        requestFullPass();
      }
    };
  }

  private ResourceEventHandler<Service> serviceEvents() {
    return new ResourceEventHandler<>() {
      @Override
      public void onAdd(Service svc) {
        touchIfOptedIn(PlanInputs.ref(svc));
      }

      @Override
      public void onUpdate(Service before, Service after) {
        if (!resync(before, after)) {
          touchIfOptedIn(PlanInputs.ref(after));
        }
      }

      @Override
      public void onDelete(Service svc, boolean finalStateUnknown) {
        touchIfOptedIn(PlanInputs.ref(svc));
      }
    };
  }

  private ResourceEventHandler<EndpointSlice> sliceEvents() {
    return new ResourceEventHandler<>() {
      @Override
      public void onAdd(EndpointSlice slice) {
        AllocatorObjects.serviceOf(slice).ifPresent(ChangeIntake.this::touchIfOptedIn);
      }

      @Override
      public void onUpdate(EndpointSlice before, EndpointSlice after) {
        if (resync(before, after)) {
          return;
        }
        Optional<ObjectRef> was = AllocatorObjects.serviceOf(before);
        Optional<ObjectRef> is = AllocatorObjects.serviceOf(after);
        is.ifPresent(ChangeIntake.this::touchIfOptedIn);
        if (!was.equals(is)) {
          was.ifPresent(ChangeIntake.this::touchIfOptedIn);
        }
      }

      @Override
      public void onDelete(EndpointSlice slice, boolean finalStateUnknown) {
        AllocatorObjects.serviceOf(slice).ifPresent(ChangeIntake.this::touchIfOptedIn);
      }
    };
  }

  private ResourceEventHandler<Node> nodeEvents() {
    return new ResourceEventHandler<>() {
      @Override
      public void onAdd(Node n) {
        nodesChanged();
      }

      @Override
      public void onUpdate(Node before, Node after) {
        // Nodes change status every few seconds; only what the allocator reads matters.
        if (!resync(before, after) && !AllocatorInputs.node(before).equals(AllocatorInputs.node(after))) {
          nodesChanged();
        }
      }

      @Override
      public void onDelete(Node n, boolean finalStateUnknown) {
        nodesChanged();
      }
    };
  }

  /** The EgressService {@code ref} is decided again in the next pass. */
  void touch(ObjectRef ref) {
    touched.add(ref);
    probeTargetsChanged.run();
    requestPass.run();
  }

  private void touchIfOptedIn(ObjectRef ref) {
    if (objects.optedIn(ref)) {
      touch(ref);
    }
  }

  private void nodesChanged() {
    nodesChanged.set(true);
    probeTargetsChanged.run();
    requestPass.run();
  }

  /** The probes' verdict on a node changed: the next pass reads the nodes again. */
  void nodeVerdictChanged() {
    nodesChanged.set(true);
    requestPass.run();
  }

  /** The next pass decides everything (a resync, or a watch that knows nothing of what it missed). */
  void requestFullPass() {
    fullNeeded.set(true);
    requestPass.run();
  }

  /** The next pass, when one runs, decides everything (no pass is asked for). */
  void needFull() {
    fullNeeded.set(true);
  }

  /** Whether the pass starting now decides everything; the note is taken. */
  boolean takeFullNeeded() {
    return fullNeeded.getAndSet(false);
  }

  /** Whether a Node (or the verdict on one) changed since the last pass; the note is taken. */
  boolean takeNodesChanged() {
    return nodesChanged.getAndSet(false);
  }

  /** Drops what the touched set holds now; what handlers add from here on is for the next pass. */
  Set<ObjectRef> drainTouched() {
    Set<ObjectRef> out = new TreeSet<>();
    for (Iterator<ObjectRef> i = touched.iterator(); i.hasNext(); ) {
      out.add(i.next());
      i.remove();
    }
    return out;
  }
}
