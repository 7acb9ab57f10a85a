package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import java.util.AbstractList;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.function.Function;

/**
 * Every service's part of the plan, in slots of fixed-size chunks that are replaced, never changed: a
 * {@link #snapshot} costs a copy of the chunk array (one reference per {@value #CHUNK} services), replacing one
 * service's part a copy of its chunk, and the plan's lists ({@link PlanList}) are views over a snapshot, so an
 * incremental plan does not copy the thousands of rules of the services it did not re-plan.
 */
final class PlanSlots {
  static final int CHUNK = 64;

  /** What a plan's list holds of each service's part. */
  enum Kind {
    RULES(ServicePlan::rules),
    SNAT(ServicePlan::snat),
    MARKS(ServicePlan::marks),
    STEERED(ServicePlan::steeredFinal),
    HELD(ServicePlan::held),
    OUTCOMES(p -> List.of(p.outcome()));

    final Function<ServicePlan, List<?>> of;

    Kind(Function<ServicePlan, List<?>> of) {
      this.of = of;
    }
  }

  private static final Kind[] KINDS = Kind.values();

  /** Up to {@value #CHUNK} parts (null: a free slot) and how many elements of each kind they hold. */
  private record Chunk(ServicePlan[] plans, int[] sizes) {
    static Chunk of(ServicePlan[] plans) {
      int[] sizes = new int[KINDS.length];
      for (ServicePlan p : plans) {
        if (p != null) {
          for (Kind k : KINDS) {
            sizes[k.ordinal()] += k == Kind.OUTCOMES ? 1 : k.of.apply(p).size();
          }
        }
      }
      return new Chunk(plans, sizes);
    }
  }

  private static final Chunk EMPTY = Chunk.of(new ServicePlan[CHUNK]);

  private Chunk[] chunks = new Chunk[0];
  /** Whether {@link #chunks} has been handed to a snapshot (then it is copied before a change). */
  private boolean shared;
  /**
   * The slot of each service's part. Copied before a change once handed to a snapshot, as {@link #chunks}: it
   * changes only when a service comes or goes, so an endpoint change copies nothing.
   */
  private Map<ObjectRef, Integer> index = new HashMap<>();
  private boolean indexShared;
  private final List<Integer> free = new ArrayList<>();
  private int used;

  /** A free slot for a new service. */
  int allocate() {
    if (!free.isEmpty()) {
      return free.remove(free.size() - 1);
    }
    if (used == chunks.length * CHUNK) {
      chunks = Arrays.copyOf(chunks, chunks.length + 1);
      chunks[chunks.length - 1] = EMPTY;
      shared = false;
    }
    return used++;
  }

  void set(int slot, ServicePlan plan) {
    if (shared) {
      chunks = chunks.clone();
      shared = false;
    }
    ServicePlan old = chunks[slot / CHUNK].plans()[slot % CHUNK];
    ObjectRef was = old == null ? null : old.service();
    ObjectRef now = plan == null ? null : plan.service();
    if (!java.util.Objects.equals(was, now)) {
      if (indexShared) {
        index = new HashMap<>(index);
        indexShared = false;
      }
      if (was != null) {
        index.remove(was);
      }
      if (now != null) {
        index.put(now, slot);
      }
    }
    ServicePlan[] plans = chunks[slot / CHUNK].plans().clone();
    plans[slot % CHUNK] = plan;
    chunks[slot / CHUNK] = Chunk.of(plans);
    if (plan == null) {
      free.add(slot);
    }
  }

  /** Every part, slot by slot (a full plan), replacing what was there. */
  void reset(List<ServicePlan> plans) {
    int n = (plans.size() + CHUNK - 1) / CHUNK;
    chunks = new Chunk[n];
    for (int c = 0; c < n; c++) {
      ServicePlan[] part = new ServicePlan[CHUNK];
      for (int i = 0; i < CHUNK && c * CHUNK + i < plans.size(); i++) {
        part[i] = plans.get(c * CHUNK + i);
      }
      chunks[c] = Chunk.of(part);
    }
    shared = false;
    index = new HashMap<>();
    for (int i = 0; i < plans.size(); i++) {
      index.put(plans.get(i).service(), i);
    }
    indexShared = false;
    free.clear();
    used = plans.size();
  }

  <T> List<T> list(Kind kind, List<T> tail) {
    shared = true;
    indexShared = true;
    return new PlanList<>(chunks, index, kind, List.copyOf(tail));
  }

  /** An immutable list; a {@link PlanList} is kept as it is (it is one already), anything else is copied. */
  static <T> List<T> frozen(List<T> list) {
    return list instanceof PlanList<T> ? list : List.copyOf(list);
  }

  /** One kind of every part of a snapshot, then {@code tail}: immutable, in slot order. */
  static final class PlanList<T> extends AbstractList<T> {
    private final Chunk[] chunks;
    private final Map<ObjectRef, Integer> index;
    private final Kind kind;
    private final List<T> tail;
    private final int size;

    private PlanList(Chunk[] chunks, Map<ObjectRef, Integer> index, Kind kind, List<T> tail) {
      this.chunks = chunks;
      this.index = index;
      this.kind = kind;
      this.tail = tail;
      int n = tail.size();
      for (Chunk c : chunks) {
        n += c.sizes()[kind.ordinal()];
      }
      this.size = n;
    }

    @Override
    public int size() {
      return size;
    }

    /** The parts of {@code services} (those with one), in the order given: O(their elements), not O(size). */
    @SuppressWarnings("unchecked")
    List<T> partsOf(Iterable<ObjectRef> services) {
      List<T> out = new ArrayList<>();
      for (ObjectRef ref : services) {
        Integer slot = index.get(ref);
        if (slot != null) {
          ServicePlan p = chunks[slot / CHUNK].plans()[slot % CHUNK];
          if (p != null) {
            out.addAll((List<T>) kind.of.apply(p));
          }
        }
      }
      return out;
    }

    /** What follows the services' parts (the node-wide items). */
    List<T> tail() {
      return tail;
    }

    @Override
    @SuppressWarnings("unchecked")
    public T get(int index) {
      if (index < 0 || index >= size) {
        throw new IndexOutOfBoundsException(index);
      }
      int i = index;
      for (Chunk c : chunks) {
        int n = c.sizes()[kind.ordinal()];
        if (i >= n) {
          i -= n;
          continue;
        }
        for (ServicePlan p : c.plans()) {
          if (p == null) {
            continue;
          }
          List<?> part = kind.of.apply(p);
          if (i < part.size()) {
            return (T) part.get(i);
          }
          i -= part.size();
        }
      }
      return tail.get(i);
    }

    @Override
    public boolean equals(Object o) {
      if (o == this) {
        return true;
      }
      if (!(o instanceof List<?> other) || other.size() != size) {
        return false;
      }
      Iterator<?> a = iterator();
      Iterator<?> b = other.iterator();
      while (a.hasNext()) {
        if (!java.util.Objects.equals(a.next(), b.next())) {
          return false;
        }
      }
      return true;
    }

    @Override
    public int hashCode() {
      return super.hashCode();
    }

    @Override
    public Iterator<T> iterator() {
      return new Iterator<>() {
        private int chunk;
        private int slot;
        private Iterator<?> part = List.of().iterator();
        private boolean inTail;

        @Override
        public boolean hasNext() {
          while (!part.hasNext()) {
            if (inTail) {
              return false;
            }
            if (chunk == chunks.length) {
              part = tail.iterator();
              inTail = true;
              continue;
            }
            Chunk c = chunks[chunk];
            if (c.sizes()[kind.ordinal()] == 0 || slot == CHUNK) {
              chunk++;
              slot = 0;
              continue;
            }
            ServicePlan p = c.plans()[slot++];
            if (p != null) {
              part = kind.of.apply(p).iterator();
            }
          }
          return true;
        }

        @Override
        @SuppressWarnings("unchecked")
        public T next() {
          if (!hasNext()) {
            throw new NoSuchElementException();
          }
          return (T) part.next();
        }
      };
    }
  }
}
