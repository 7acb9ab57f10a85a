package io.egressservice.explain;

import io.egressservice.ip.IpPrefix;
import io.egressservice.text.Printable;
import java.io.PrintWriter;

/**
 * {@code explain -o text}: the kernel's facts, the API's claims, then the sentence. Each line is {@linkplain
 * Printable#escape escaped} as a whole: names, networks, Event messages (anyone who may create Events writes those)
 * and the kernel's comments can neither start a line of their own nor hide anything on the reader's terminal.
 */
public final class ExplainText {
  private ExplainText() {}

  /**
   * With the running agent's view of the API ({@link AgentViewOutput#text}): the kernel holds what the agent last
   * applied from it, so its age says how far the verdict above may lag the API.
   */
  public static void write(PrintWriter out, Explanation e, java.util.List<String> agentView) {
    KernelVerdict k = e.kernel();
    Printable.println(out, "source       " + k.source().addressText()
        + e.api().pod().map(p -> " (pod " + p + ")").orElse("") + " on " + e.node() + ", arriving on " + k.podInterface());
    Printable.println(out, "destination  " + k.destination().addressText()
        + (k.inCluster() ? " (in the cluster: never SNATed)" : ""));
    Printable.println(out, "kernel       route get " + k.destination().addressText() + " from "
        + k.source().addressText() + " iif " + k.podInterface() + (k.mark() != 0 ? " mark 0x" + Long.toHexString(k.mark()) : "")
        + ": " + (k.routeType().equals("unicast") ? "" : k.routeType() + " ")
        + "table " + Explanation.tableText(k.table()) + " dev " + k.outputInterface()
        + k.gateway().map(g -> " via " + g.addressText()).orElse(""));
    Printable.println(out, "our rule     " + k.rule().orElse("none matches"));
    k.thrownBy().ifPresent(t -> Printable.println(out, "thrown back  by our " + t + " (an in-cluster destination)"));
    k.steeredTo().ifPresent(a -> Printable.println(out, "steered      to " + a.addressText()
        + e.steeredToNode().map(n -> " (" + n + ")").orElse("") + " over " + k.outputInterface()));
    Printable.println(out, "snat         " + k.snat().map(IpPrefix::addressText).map(s -> "to " + s + k.snatService()
        .map(c -> " (" + c + ")").orElse("")).orElse("none of ours"));
    Printable.println(out, "no-host      " + k.heldBy().map(s -> "held by " + s + " (no host): dropped out of the cluster, "
        + k.heldDrops() + " packet(s) so far").orElse("not held"));
    Printable.println(out, "guard        " + (k.guarded() ? "ours: leaves only from its own link (spoofed drops: " + k.guardDrops()
        + ")" : "not one of our sources"));
    k.notes().forEach(n -> Printable.println(out, "note         " + n));
    if (!e.apiAsked()) {
      Printable.println(out, "api          not asked (no --kubeconfig and not in a cluster)");
    } else if (e.apiError().isPresent()) {
      Printable.println(out, "api          unavailable: " + e.apiError().get());
    } else if (e.api().claims().isEmpty()) {
      Printable.println(out, "api          no Service lists " + k.source().addressText() + " as an endpoint");
    }
    for (ApiClaims.Claim c : e.api().claims()) {
      Printable.println(out, "claimed by   Service " + c.service() + (c.egressService()
          ? ", EgressService (" + c.describe() + "), host " + c.host().orElse("none")
              + (c.lbIps().isEmpty() ? "" : ", LB IPs " + String.join(", ", c.lbIps()))
          : " (no EgressService of that name)"));
      for (ApiClaims.Reason r : c.reasons()) {
        Printable.println(out, "  " + r.type() + " " + r.reason() + (r.reporter().isEmpty() ? "" : " (" + r.reporter() + ")")
            + ": " + r.message());
      }
    }
    for (int i = 0; i < agentView.size(); i++) {
      Printable.println(out, (i == 0 ? "agent        " : "             ") + agentView.get(i).strip());
    }
    out.println();
    Printable.println(out, e.sentence());
  }
}
