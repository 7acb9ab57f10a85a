package io.egressservice.explain;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.ip.IpPrefix;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

/**
 * {@code explain}'s text quotes names, networks and Event messages that others wrote (anyone who may create Events
 * writes a message): each of its lines stays one line, with nothing a terminal acts on.
 */
class ExplainTextTest {
  static String text(Explanation e) {
    StringWriter out = new StringWriter();
    ExplainText.write(new PrintWriter(out, true), e, java.util.List.of());
    return out.toString();
  }

  static Explanation explanation(String network, String eventMessage) {
    IpPrefix pod = IpPrefix.parseHost("10.128.0.5");
    KernelVerdict kernel = new KernelVerdict(pod, IpPrefix.parseHost("1.1.1.1"), "eth0", 0, 100, "unicast", "eth1",
        Optional.empty(), Optional.of("from 10.128.0.5 lookup 100"), OptionalLong.of(100), Optional.empty(),
        Optional.empty(), Optional.of(IpPrefix.parseHost("5.5.5.5")), Optional.of("shop/web"), false,
        Optional.empty(), 0, true, 0, List.of());
    ApiClaims.Claim claim = new ApiClaims.Claim("shop/web", true, "LoadBalancerIP", Optional.of(network),
        Optional.of("node-a"), List.of("5.5.5.5"),
        List.of(new ApiClaims.Reason("Warning", "NetworkNotFound", eventMessage, "node-a", "2026-12-07T10:00:00Z")));
    return new Explanation("node-a", kernel, new ApiClaims(Optional.of("shop/web-1"), Optional.of("node-a"),
        List.of(claim), Map.of()), true, Optional.empty());
  }

  @Test
  void namesNetworksAndEventMessagesAreEscapedAndEveryLineStaysOneLine() {
    String plain = text(explanation("100", "on node node-a: network '100' is not found"));
    String hostile = text(explanation("evil\ntouch /tmp/PWNED #\u001b[8m",
        "on node node-a: network \u202eexe.txt\nclaimed by   Service forged/line"));

    assertThat(hostile.lines()).hasSameSizeAs(plain.lines().toList());
    assertThat(hostile).doesNotContain("\u001b", "\u202e", "\r")
        .contains("EgressService (LoadBalancerIP, network evil\\ntouch /tmp/PWNED #\\x1b[8m)")
        .contains("NetworkNotFound (node-a): on node node-a: network \\u202eexe.txt\\nclaimed by   Service forged/line");
    assertThat(hostile.lines().filter(l -> l.startsWith("claimed by"))).hasSize(1);
  }

  @Test
  void plainTextIsUnchanged() {
    assertThat(text(explanation("100", "on node node-a: network '100' is not found")))
        .contains("claimed by   Service shop/web, EgressService (LoadBalancerIP, network 100), host node-a, LB IPs 5.5.5.5")
        .contains("  Warning NetworkNotFound (node-a): on node node-a: network '100' is not found");
  }
}
