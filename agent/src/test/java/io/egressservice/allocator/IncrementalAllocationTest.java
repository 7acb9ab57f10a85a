package io.egressservice.allocator;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.plan.EndpointSliceInfo;
import io.egressservice.model.EndpointTrust;
import io.egressservice.model.ObjectRef;
import io.egressservice.plan.ServiceInfo;
import io.egressservice.plan.SourceIpBy;
import io.fabric8.kubernetes.api.model.LabelSelector;
import io.fabric8.kubernetes.api.model.LabelSelectorBuilder;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * The incremental allocation against the full pass ({@link AllocationPass#compute}) as oracle: random sequences of
 * changes to EgressServices, Services, slices, nodes and probe verdicts, with the status writes and label patches
 * fed back as a cluster would, late or at once.
 */
class IncrementalAllocationTest {
  private static final String NS = "ns";
  private static final EndpointTrust TRUST = EndpointTrust.kubernetesOnly();
  private static final int SEQUENCES = 400;

  /** A small cluster that mutates at random. */
  private static final class World {
    final Random random;
    final int serviceCount;
    final int nodeCount;
    final TreeMap<ObjectRef, EgressServiceState> egressServices = new TreeMap<>();
    final Map<ObjectRef, ServiceInfo> services = new HashMap<>();
    final Map<ObjectRef, List<EndpointSliceInfo>> slices = new HashMap<>();
    final TreeMap<String, NodeState> nodes = new TreeMap<>();
    /** Status writes the cluster has accepted but the caches do not show yet. */
    final Map<ObjectRef, String> pendingStatus = new HashMap<>();

    World(long seed, int services, int nodes) {
      random = new Random(seed);
      serviceCount = services;
      nodeCount = nodes;
      for (int i = 0; i < nodes; i++) {
        this.nodes.put("n" + i, node(i, Map.of("zone", i % 2 == 0 ? "a" : "b"), true, false));
      }
      for (int i = 0; i < services; i++) {
        ObjectRef ref = ref(i);
        egressServices.put(ref, egressService(ref, ""));
        this.services.put(ref, lb(ref, true));
        slices.put(ref, List.of(slice(ref, 0, randomNodes())));
      }
    }

    /** s3 and s4 share a host label ({@code <NS>-s0-x}): the older (then the first by namespace/name) holds it. */
    static ObjectRef ref(int i) {
      return switch (i) {
        case 3 -> new ObjectRef(NS + "-s0", "x");
        case 4 -> new ObjectRef(NS, "s0-x");
        default -> new ObjectRef(NS, "s" + i);
      };
    }

    NodeState node(int i, Map<String, String> labels, boolean ready, boolean cordoned) {
      return new NodeState("n" + i, labels, ready, cordoned, false, List.of("192.168.0." + i),
          List.of("10.128." + i + ".0/24"));
    }

    EgressServiceState egressService(ObjectRef ref, String statusHost) {
      int kind = random.nextInt(20);
      if (kind == 0) {
        return new EgressServiceState(ref, SourceIpBy.LOAD_BALANCER_IP, Optional.empty(), statusHost, true,
            Optional.of("spec.sourceIPBy: not a string"));
      }
      if (kind == 1) {
        return new EgressServiceState(ref, SourceIpBy.NETWORK, Optional.empty(), statusHost, true);
      }
      Optional<LabelSelector> selector = switch (random.nextInt(6)) {
        case 0 -> Optional.of(new LabelSelectorBuilder().addToMatchLabels("zone", "a").build());
        case 1 -> Optional.of(new LabelSelectorBuilder().addToMatchLabels("bad key!", "x").build());
        default -> Optional.empty();
      };
      // From the name, not the random stream (whose draws the other tests' expectations follow): some of unknown age.
      int age = Math.floorMod(ref.hashCode(), 4);
      Optional<java.time.Instant> created = age == 3 ? Optional.empty()
          : Optional.of(java.time.Instant.parse("2026-01-01T00:00:00Z").plusSeconds(age));
      return new EgressServiceState(ref, SourceIpBy.LOAD_BALANCER_IP, selector, statusHost, random.nextInt(10) > 0,
          Optional.empty(), "", created);
    }

    ServiceInfo lb(ObjectRef ref, boolean usual) {
      String type = usual || random.nextInt(4) > 0 ? ServiceInfo.LOAD_BALANCER : "ClusterIP";
      List<ServiceInfo.Ingress> ingress = usual || random.nextInt(4) > 0
          ? List.of(new ServiceInfo.Ingress("203.0.113." + random.nextInt(200), "")) : List.of();
      return new ServiceInfo(ref, type, List.of("172.30.0.1"), ingress, usual || random.nextInt(8) > 0,
          Optional.empty());
    }

    int[] randomNodes() {
      return IntStream.range(0, 1 + random.nextInt(3)).map(k -> random.nextInt(nodeCount + 1)).toArray();
    }

    /** Endpoints on the given nodes (index nodeCount: a node that does not exist); some on host addresses. */
    EndpointSliceInfo slice(ObjectRef ref, int k, int[] onNodes) {
      List<EndpointSliceInfo.Endpoint> endpoints = new ArrayList<>();
      for (int i : onNodes) {
        String address = random.nextInt(6) == 0 ? "192.168.0." + i : "10.128." + i + "." + (10 + random.nextInt(200));
        endpoints.add(new EndpointSliceInfo.Endpoint(List.of(address), Optional.of("n" + i)));
      }
      String manager = random.nextInt(12) == 0 ? "someone-else" : EndpointSliceInfo.ENDPOINTSLICE_CONTROLLER;
      return new EndpointSliceInfo(new ObjectRef(ref.namespace(), ref.name() + "-" + k), ref.name(), "IPv4", manager,
          endpoints);
    }

    Optional<ServiceInputs> inputs(ObjectRef ref) {
      EgressServiceState es = egressServices.get(ref);
      return es == null ? Optional.empty() : Optional.of(new ServiceInputs(es, Optional.ofNullable(services.get(ref)),
          slices.getOrDefault(ref, List.of())));
    }

    List<ServiceInputs> allInputs() {
      return egressServices.keySet().stream().map(this::inputs).flatMap(Optional::stream).toList();
    }

    AllocationPass.Result oracle() {
      List<ServiceInfo> svcs = new ArrayList<>();
      List<EndpointSliceInfo> all = new ArrayList<>();
      for (ObjectRef ref : egressServices.keySet()) {
        Optional.ofNullable(services.get(ref)).ifPresent(svcs::add);
        all.addAll(slices.getOrDefault(ref, List.of()));
      }
      // objects no EgressService names are in the caches too: the oracle must ignore them
      all.add(new EndpointSliceInfo(new ObjectRef(NS, "other-1"), "other", "IPv4",
          List.of(new EndpointSliceInfo.Endpoint(List.of("10.128.0.99"), Optional.of("n0")))));
      return AllocationPass.compute(List.copyOf(egressServices.values()), svcs, all, List.copyOf(nodes.values()),
          TRUST);
    }

    /** One random change; the EgressService refs it touched are added to {@code touched}. */
    boolean mutate(List<ObjectRef> touched) {
      ObjectRef ref = ref(random.nextInt(serviceCount));
      switch (random.nextInt(12)) {
        case 0, 1, 2 -> {
          // endpoint churn
          List<EndpointSliceInfo> own = new ArrayList<>(slices.getOrDefault(ref, List.of()));
          int k = random.nextInt(2);
          if (own.size() > k && random.nextInt(5) == 0) {
            own.remove(k);
          } else if (own.size() > k) {
            own.set(k, slice(ref, k, randomNodes()));
          } else {
            own.add(slice(ref, own.size(), randomNodes()));
          }
          slices.put(ref, own);
          touched.add(ref);
        }
        case 3 -> {
          if (random.nextBoolean()) {
            services.put(ref, lb(ref, false));
          } else {
            services.remove(ref);
          }
          touched.add(ref);
        }
        case 4 -> {
          if (egressServices.containsKey(ref) && random.nextInt(3) == 0) {
            egressServices.remove(ref);
          } else {
            EgressServiceState old = egressServices.get(ref);
            egressServices.put(ref, egressService(ref, old == null ? "" : old.statusHost()));
          }
          touched.add(ref);
        }
        case 5 -> {
          // someone else writes status.host
          EgressServiceState old = egressServices.get(ref);
          if (old != null) {
            String host = random.nextBoolean() ? "n" + random.nextInt(nodeCount + 1) : "";
            egressServices.put(ref, withStatus(old, host));
            touched.add(ref);
          }
        }
        case 6, 7 -> {
          NodeState n = nodes.get("n" + random.nextInt(nodeCount));
          if (n != null) {
            nodes.put(n.name(), new NodeState(n.name(), n.labels(), random.nextInt(3) > 0, random.nextInt(4) == 0,
                random.nextInt(15) == 0, n.addresses(), n.podCidrs(), random.nextInt(4) == 0));
            return true;
          }
        }
        case 8 -> {
          NodeState n = nodes.get("n" + random.nextInt(nodeCount));
          if (n != null) {
            Map<String, String> labels = new HashMap<>(n.labels());
            switch (random.nextInt(3)) {
              case 0 -> labels.put("zone", random.nextBoolean() ? "a" : "b");
              case 1 -> labels.put("egress-service.k8s.ovn.org/" + NS + "-stray", "");
              default -> labels.remove("zone");
            }
            nodes.put(n.name(), new NodeState(n.name(), labels, n.ready(), n.unschedulable(), n.deleting(),
                n.addresses(), n.podCidrs(), n.agentUnreachable()));
            return true;
          }
        }
        case 9 -> {
          // a node joins, leaves, or changes its pod CIDR (rare in a cluster; everything is decided again)
          int i = random.nextInt(nodeCount + 1);
          String name = "n" + i;
          if (nodes.containsKey(name) && random.nextBoolean()) {
            nodes.remove(name);
          } else if (nodes.containsKey(name)) {
            NodeState n = nodes.get(name);
            nodes.put(name, new NodeState(name, n.labels(), n.ready(), n.unschedulable(), n.deleting(),
                n.addresses(), random.nextBoolean() ? List.of() : List.of("10.128." + i + ".0/24"),
                n.agentUnreachable()));
          } else {
            nodes.put(name, node(i, Map.of("zone", "a"), true, false));
          }
          return true;
        }
        default -> {
          // the cluster shows status writes the allocator made earlier
          for (ObjectRef written : new ArrayList<>(pendingStatus.keySet())) {
            if (random.nextBoolean()) {
              showStatus(written, pendingStatus.remove(written), touched);
            }
          }
        }
      }
      return false;
    }

    void showStatus(ObjectRef ref, String host, List<ObjectRef> touched) {
      EgressServiceState old = egressServices.get(ref);
      if (old != null) {
        egressServices.put(ref, withStatus(old, host));
        touched.add(ref);
      }
    }

    static EgressServiceState withStatus(EgressServiceState es, String host) {
      return new EgressServiceState(es.ref(), es.sourceIpBy(), es.nodeSelector(), host, true, es.malformed(),
          es.network(), es.created());
    }

    /** The label patches reach the nodes at once (a patch that fails fails the pass, which then is full). */
    void patch(Map<String, Map<String, Boolean>> changes) {
      changes.forEach((name, c) -> {
        NodeState n = nodes.get(name);
        Map<String, String> labels = new HashMap<>(n.labels());
        c.forEach((key, set) -> {
          if (set) {
            labels.put(key, "");
          } else {
            labels.remove(key);
          }
        });
        nodes.put(name, new NodeState(name, labels, n.ready(), n.unschedulable(), n.deleting(), n.addresses(),
            n.podCidrs(), n.agentUnreachable()));
      });
    }
  }

  /** What the allocator does with a step: write the status of decisions that differ (seen later or at once). */
  private static void writeStatuses(World w, List<Decision> evaluated, List<ObjectRef> touched) {
    for (Decision d : evaluated) {
      EgressServiceState es = w.egressServices.get(d.ref());
      if (d.reason() != Reason.MALFORMED && (!es.hasStatus() || !d.host().equals(es.statusHost()))) {
        if (w.random.nextInt(3) == 0) {
          w.pendingStatus.put(d.ref(), d.host());
        } else {
          w.showStatus(d.ref(), d.host(), touched);
        }
      }
    }
  }

  @Test
  void incrementalDecisionsEqualTheFullPassForRandomSequencesOfChanges() {
    int steps = 0;
    for (long seed = 1; seed <= SEQUENCES; seed++) {
      World w = new World(seed, 4 + (int) (seed % 9), 2 + (int) (seed % 4));
      IncrementalAllocation inc = new IncrementalAllocation(TRUST);
      IncrementalAllocation.Step first = inc.full(w.allInputs(), List.copyOf(w.nodes.values()));
      assertThat(first.evaluated()).isEqualTo(w.oracle().decisions());
      assertThat(first.labelChanges()).isEqualTo(w.oracle().labelChanges());
      List<ObjectRef> touched = new ArrayList<>();
      boolean nodesChanged = false;
      w.patch(first.labelChanges());
      nodesChanged = true;
      writeStatuses(w, first.evaluated(), touched);
      for (int step = 0; step < 60; step++, steps++) {
        int changes = w.random.nextInt(4);
        for (int c = 0; c < changes; c++) {
          nodesChanged |= w.mutate(touched);
        }
        for (ObjectRef ref : touched) {
          w.inputs(ref).ifPresentOrElse(inc::put, () -> inc.remove(ref));
        }
        touched.clear();
        if (nodesChanged) {
          inc.nodes(List.copyOf(w.nodes.values()));
        }
        IncrementalAllocation.Step s = inc.evaluate();
        AllocationPass.Result oracle = w.oracle();
        String where = "seed " + seed + ", step " + step;
        assertThat(inc.decisions()).as(where).isEqualTo(oracle.decisions());
        // whatever the full pass would still write is in what this evaluation decided
        List<ObjectRef> evaluated = s.evaluated().stream().map(Decision::ref).toList();
        for (Decision d : oracle.decisions()) {
          EgressServiceState es = w.egressServices.get(d.ref());
          if (d.reason() != Reason.MALFORMED && !w.pendingStatus.containsKey(d.ref())
              && (!es.hasStatus() || !d.host().equals(es.statusHost()))) {
            assertThat(evaluated).as(where + ": %s needs a status write", d.ref()).contains(d.ref());
          }
        }
        w.patch(s.labelChanges());
        nodesChanged = !s.labelChanges().isEmpty();
        assertThat(w.oracle().labelChanges()).as(where + ": labels left to change after the patches").isEmpty();
        writeStatuses(w, s.evaluated(), touched);
        assertThat(inc.hostedNodes()).as(where).isEqualTo(oracle.decisions().stream()
            .filter(d -> d.reason() == Reason.HOST_ALLOCATED).map(Decision::host)
            .collect(java.util.stream.Collectors.toCollection(java.util.TreeSet::new)));
      }
    }
    assertThat(steps).isEqualTo(SEQUENCES * 60);
  }

  @Test
  void anEndpointChangeDecidesOnlyItsServiceAndAnUnchangedOneNothing() {
    World w = new World(7, 1000, 20);
    IncrementalAllocation inc = new IncrementalAllocation(TRUST);
    IncrementalAllocation.Step first = inc.full(w.allInputs(), List.copyOf(w.nodes.values()));
    // converge: the status writes and labels reach the cluster
    List<ObjectRef> touched = new ArrayList<>();
    writeStatuses(w, first.evaluated(), touched);
    w.pendingStatus.forEach((ref, host) -> w.showStatus(ref, host, touched));
    w.pendingStatus.clear();
    w.patch(first.labelChanges());
    touched.forEach(ref -> inc.put(w.inputs(ref).orElseThrow()));
    inc.nodes(List.copyOf(w.nodes.values()));
    inc.evaluate();

    ObjectRef one = World.ref(500);
    w.slices.put(one, List.of(w.slice(one, 0, w.randomNodes())));
    inc.put(w.inputs(one).orElseThrow());
    IncrementalAllocation.Step step = inc.evaluate();
    assertThat(step.evaluated()).extracting(Decision::ref).containsExactly(one);
    assertThat(inc.decisions()).isEqualTo(w.oracle().decisions());

    inc.put(w.inputs(World.ref(501)).orElseThrow()); // the same inputs again (a resync, a status echo)
    assertThat(inc.evaluate().evaluated()).isEmpty();
  }

  @Test
  void aNodeGoingNotReadyDecidesOnlyTheServicesWithEndpointsThereOrWithoutHost() {
    World w = new World(11, 200, 20);
    IncrementalAllocation inc = new IncrementalAllocation(TRUST);
    inc.full(w.allInputs(), List.copyOf(w.nodes.values()));
    NodeState n3 = w.nodes.get("n3");
    w.nodes.put("n3", new NodeState("n3", n3.labels(), false, false, false, n3.addresses(), n3.podCidrs()));
    inc.nodes(List.copyOf(w.nodes.values()));
    IncrementalAllocation.Step step = inc.evaluate();
    assertThat(inc.decisions()).isEqualTo(w.oracle().decisions());
    assertThat(step.evaluated()).isNotEmpty().hasSizeLessThan(200).allSatisfy(d -> {
      ServiceInputs in = inc.inputs(d.ref()).orElseThrow();
      boolean endpointThere = in.slices().stream().flatMap(s -> s.endpoints().stream())
          .anyMatch(e -> e.nodeName().equals(Optional.of("n3")));
      boolean loadDependent = d.reason() == Reason.HOST_ALLOCATED && !d.host().equals(in.egressService().statusHost());
      assertThat(endpointThere || loadDependent || d.reason() == Reason.NO_HOST_AVAILABLE).as("%s", d).isTrue();
    });
  }
}
