package io.egressservice.metrics;

import com.sun.jna.Library;
import com.sun.jna.Native;
import com.sun.jna.NativeLong;
import com.sun.jna.Structure;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.Unit;
import java.util.Optional;

/**
 * {@code egress_service_agent_native_heap_bytes{state="in_use"|"free"}}: the process's C heap as glibc's {@code
 * mallinfo2(3)} tells it, summed over its arenas. That is where libnftables builds its listings and transactions
 * and where the JVM keeps what it mallocs, none of which {@code jvm_memory_*} shows: with the heap figures it says
 * what the resident memory is made of (the memory budget in deploy/README.md). {@code in_use} is allocated and not
 * freed (mmapped blocks included), {@code free} is freed but still held in the arenas (what {@code malloc_trim} can
 * give back). Absent where libc has no {@code mallinfo2} (glibc before 2.33, musl) rather than a wrong figure.
 */
public final class NativeHeapMetrics {
  private NativeHeapMetrics() {}

  /** {@code struct mallinfo2}: ten {@code size_t}, which is a C long on Linux. */
  @Structure.FieldOrder({"arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
      "fordblks", "keepcost"})
  public static class MallInfo2 extends Structure {
    public NativeLong arena;
    public NativeLong ordblks;
    public NativeLong smblks;
    public NativeLong hblks;
    public NativeLong hblkhd;
    public NativeLong usmblks;
    public NativeLong fsmblks;
    public NativeLong uordblks;
    public NativeLong fordblks;
    public NativeLong keepcost;

    /** Returned by value. */
    public static class ByValue extends MallInfo2 implements Structure.ByValue {}
  }

  interface Glibc extends Library {
    MallInfo2.ByValue mallinfo2();
  }

  /** What the heap holds now: bytes in use and bytes free in the arenas. */
  public record Reading(long inUse, long free) {}

  private static final Optional<Glibc> GLIBC = load();

  /** The heap now, or empty where it cannot be read. */
  public static Optional<Reading> read() {
    return GLIBC.map(c -> {
      MallInfo2 m = c.mallinfo2();
      return new Reading(m.uordblks.longValue() + m.hblkhd.longValue(), m.fordblks.longValue());
    });
  }

  /** Registers the gauge in {@code registry} when the heap can be read; once per registry. */
  public static void register(PrometheusRegistry registry) {
    if (read().isEmpty()) {
      return;
    }
    GaugeWithCallback.builder()
        .name("egress_service_agent_native_heap_bytes")
        .help("The process's C heap (glibc mallinfo2, all arenas): in_use is allocated and not freed, free is freed"
            + " but still held by malloc; libnftables' listings and transactions and the JVM's own mallocs live here")
        .unit(Unit.BYTES)
        .labelNames("state")
        .callback(cb -> read().ifPresent(r -> {
          cb.call(r.inUse(), "in_use");
          cb.call(r.free(), "free");
        }))
        .register(registry);
  }

  private static Optional<Glibc> load() {
    try {
      Glibc c = Native.load("c", Glibc.class);
      c.mallinfo2(); // resolves the symbol now
      return Optional.of(c);
    } catch (UnsatisfiedLinkError e) {
      return Optional.empty();
    }
  }
}
