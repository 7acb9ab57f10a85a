package io.egressservice.explain;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.ip.IpPrefix;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

/**
^ * {@code explain} of a pod that no rule of ours touches says, when the API was asked, that it did not opt in and why:
 * no Service lists it, or the Services that do have no EgressService. The pod is named as the user named it, also
 * when no EndpointSlice does (the agent's account may not read pods). A packet our rule sent to a network's table
 * that has no route for it is said to have fallen through.
 */
class ExplanationSentenceTest {
  private static final KernelVerdict UNTOUCHED = new KernelVerdict(IpPrefix.parseHost("10.128.1.9"),
      IpPrefix.parseHost("1.1.1.1"), "veth9", 0, 254, "unicast", "eth0", Optional.empty(), Optional.empty(),
      OptionalLong.empty(), Optional.empty(), Optional.empty(), Optional.empty(), Optional.empty(), false,
      Optional.empty(), 0, false, 0, List.of());

  @Test
  void aPodNoServiceListsDidNotOptIn() {
    ApiClaims claims = ApiClaims.NONE.forPod("batch/job-7", Optional.of("node-b"));

    Explanation e = new Explanation("node-b", UNTOUCHED, claims, true, Optional.empty());

    assertThat(e.kind()).isEqualTo(Explanation.Kind.NOT_OPTED_IN);
    assertThat(e.sentence()).isEqualTo("10.128.1.9 (batch/job-7) leaves node-b through eth0 (table main); no rule of"
        + " ours touches it: it did not opt in (no Service lists it as an endpoint)");
  }

  @Test
  void aPodWhoseServiceHasNoEgressServiceDidNotOptIn() {
    ApiClaims.Claim plain = new ApiClaims.Claim("shop/cart", false, "", Optional.empty(), Optional.empty(),
        List.of(), List.of());
    ApiClaims claims = new ApiClaims(Optional.empty(), Optional.empty(), List.of(plain), Map.of())
        .forPod("shop/cart-1", Optional.empty());

    Explanation e = new Explanation("node-b", UNTOUCHED, claims, true, Optional.empty());

    assertThat(e.sentence()).endsWith("(shop/cart-1) leaves node-b through eth0 (table main); no rule of ours touches"
        + " it: it did not opt in (Service shop/cart that lists it has no EgressService)");
  }

  @Test
  void withoutTheApiItSaysOnlyWhatTheKernelDoes() {
    Explanation e = new Explanation("node-b", UNTOUCHED, ApiClaims.NONE, false, Optional.empty());

    assertThat(e.sentence()).isEqualTo("10.128.1.9 leaves node-b through eth0 (table main); no rule of ours touches"
        + " it");
  }

  /** A network's table without a route of the packet's family: our rule matched, the main table decided. */
  @Test
  void aRuleOfOursWhoseTableHasNoRouteSaysTheLookupFellThrough() {
    KernelVerdict fellThrough = new KernelVerdict(IpPrefix.parseHost("fd00:10:128::5"),
        IpPrefix.parseHost("2606:4700:4700::1111"), "veth5", 0, 254, "unicast", "eth0", Optional.empty(),
        Optional.of("from fd00:10:128::5 lookup 100"), OptionalLong.of(100), Optional.empty(), Optional.empty(),
        Optional.empty(), Optional.of("shop/web"), false, Optional.empty(), 0, false, 0, List.of());

    Explanation e = new Explanation("node-a", fellThrough, ApiClaims.NONE, false, Optional.empty());

    assertThat(e.kind()).isEqualTo(Explanation.Kind.LOCAL);
    assertThat(e.sentence()).endsWith("; but table 100 has no route to 2606:4700:4700::1111, so the lookup fell"
        + " through to table main: add one of its family to the network's table");
  }
}
