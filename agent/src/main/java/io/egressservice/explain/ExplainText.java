package io.egressservice.explain;

import io.egressservice.ip.IpPrefix;
import java.io.PrintWriter;

/** {@code explain -o text}: the kernel's facts, the API's claims, then the sentence. */
public final class ExplainText {
  private ExplainText() {}

  public static void write(PrintWriter out, Explanation e) {
    KernelVerdict k = e.kernel();
    out.println("source       " + k.source().addressText() + e.api().pod().map(p -> " (pod " + p + ")").orElse("")
        + " on " + e.node() + ", arriving on " + k.podInterface());
    out.println("destination  " + k.destination().addressText() + (k.inCluster() ? " (in the cluster: never SNATed)" : ""));
    out.println("kernel       route get " + k.destination().addressText() + " from " + k.source().addressText()
        + " iif " + k.podInterface() + (k.mark() != 0 ? " mark 0x" + Long.toHexString(k.mark()) : "")
        + ": " + (k.routeType().equals("unicast") ? "" : k.routeType() + " ")
        + "table " + Explanation.tableText(k.table()) + " dev " + k.outputInterface()
        + k.gateway().map(g -> " via " + g.addressText()).orElse(""));
    out.println("our rule     " + k.rule().orElse("none matches"));
    k.thrownBy().ifPresent(t -> out.println("thrown back  by our " + t + " (an in-cluster destination)"));
    k.steeredTo().ifPresent(a -> out.println("steered      to " + a.addressText()
        + e.steeredToNode().map(n -> " (" + n + ")").orElse("") + " over " + k.outputInterface()));
    out.println("snat         " + k.snat().map(IpPrefix::addressText).map(s -> "to " + s + k.snatService()
        .map(c -> " (" + c + ")").orElse("")).orElse("none of ours"));
    out.println("no-host      " + k.heldBy().map(s -> "held by " + s + " (no host): dropped out of the cluster, "
        + k.heldDrops() + " packet(s) so far").orElse("not held"));
    out.println("guard        " + (k.guarded() ? "ours: leaves only from its own link (spoofed drops: " + k.guardDrops()
        + ")" : "not one of our sources"));
    k.notes().forEach(n -> out.println("note         " + n));
    if (!e.apiAsked()) {
      out.println("api          not asked (no --kubeconfig and not in a cluster)");
    } else if (e.apiError().isPresent()) {
      out.println("api          unavailable: " + e.apiError().get());
    } else if (e.api().claims().isEmpty()) {
      out.println("api          no Service lists " + k.source().addressText() + " as an endpoint");
    }
    for (ApiClaims.Claim c : e.api().claims()) {
      out.println("claimed by   Service " + c.service() + (c.egressService()
          ? ", EgressService (" + c.describe() + "), host " + c.host().orElse("none")
              + (c.lbIps().isEmpty() ? "" : ", LB IPs " + String.join(", ", c.lbIps()))
          : " (no EgressService of that name)"));
      for (ApiClaims.Reason r : c.reasons()) {
        out.println("  " + r.type() + " " + r.reason() + (r.reporter().isEmpty() ? "" : " (" + r.reporter() + ")")
            + ": " + r.message());
      }
    }
    out.println();
    out.println(e.sentence());
  }
}
