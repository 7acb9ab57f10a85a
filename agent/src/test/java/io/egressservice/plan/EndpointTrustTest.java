package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import io.egressservice.model.PlanConfig;
import io.egressservice.model.EndpointTrust;
import static io.egressservice.plan.Fixture.outcome;
import static io.egressservice.plan.Fixture.skipped;
import static io.egressservice.plan.Fixture.snat;
import static io.egressservice.plan.Fixture.sourceRules;
import static io.egressservice.plan.SourceIpBy.LOAD_BALANCER_IP;
import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.ip.IpPrefix;
import io.egressservice.plan.EndpointSliceInfo.Endpoint;
import io.egressservice.plan.EndpointSliceInfo.TargetRef;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * A namespace user lists another namespace's pod in a hand-made EndpointSlice of a
 * selector-less LoadBalancer Service and opts it in; the victim pod's egress must not leave with the
 * attacker's LB IP and table, and the victim's own later opt-in must win.
 */
class EndpointTrustTest {
  static final String NODE = "node-a";
  static final String VICTIM_POD = "10.128.0.7";
  static final Instant EARLIER = Instant.parse("2026-01-01T00:00:00Z");
  static final Instant LATER = Instant.parse("2026-02-01T00:00:00Z");

  static Fixture cluster() {
    return Fixture.cluster()
        .node(NODE, List.of("192.168.1.10"), "10.128.0.0/24")
        .config(PlanConfig.defaults().withCidrs(List.of(), List.of(IpPrefix.parse("172.30.0.0/16")), List.of()));
  }

  /** evil/grab: selector-less, its slice written by the attacker, naming shop's pod; opted in first. */
  static Fixture withAttacker(Fixture f, String manager, Optional<TargetRef> targetRef) {
    return f.egress("evil", "grab", LOAD_BALANCER_IP, "100", NODE, Optional.of(EARLIER))
        .service(new ServiceInfo(new ObjectRef("evil", "grab"), "LoadBalancer", List.of("172.30.0.66"),
            List.of(new ServiceInfo.Ingress("6.6.6.6", "")), false, Optional.of(EARLIER)))
        .slice(new EndpointSliceInfo(new ObjectRef("evil", "grab-1"), "grab", "IPv4", manager,
            List.of(new Endpoint(List.of(VICTIM_POD), Optional.of(NODE), targetRef))));
  }

  /** shop/web: a Service with a selector, its slice by the EndpointSlice controller; opted in later. */
  static Fixture withVictim(Fixture f) {
    return f.egress("shop", "web", LOAD_BALANCER_IP, "", NODE, Optional.of(LATER))
        .service(new ServiceInfo(new ObjectRef("shop", "web"), "LoadBalancer", List.of("172.30.0.10"),
            List.of(new ServiceInfo.Ingress("5.5.5.5", "")), true, Optional.of(LATER)))
        .slice(new EndpointSliceInfo(new ObjectRef("shop", "web-abcde"), "web", "IPv4",
            EndpointSliceInfo.ENDPOINTSLICE_CONTROLLER,
            List.of(new Endpoint(List.of(VICTIM_POD), Optional.of(NODE), Optional.empty()))));
  }

  static Optional<TargetRef> pod(String namespace) {
    return Optional.of(new TargetRef("Pod", namespace));
  }

  @Test
  void handMadeSliceCannotClaimAnotherNamespacesPodAndSaysWhy() {
    DesiredState s = withAttacker(cluster(), "evil-controller", pod("shop")).plan(NODE);

    assertThat(s.snat()).isEmpty();
    assertThat(sourceRules(s)).noneMatch(r -> r.contains(VICTIM_POD));
    assertThat(skipped(s, "grab")).singleElement().asString()
        .startsWith(VICTIM_POD + ": EndpointSlice evil/grab-1 is managed by 'evil-controller'")
        .contains("not trusted").contains("--trusted-endpoint-managers");
  }

  @Test
  void theVictimsLaterOptInKeepsItsPodAlthoughTheAttackersEgressServiceIsOlder() {
    DesiredState s = withVictim(withAttacker(cluster(), "evil-controller", pod("shop"))).plan(NODE);

    assertThat(snat(s)).containsExactly(VICTIM_POD + " -> 5.5.5.5 shop/web");
    assertThat(outcome(s, "web").skippedEndpoints()).isEmpty();
    assertThat(sourceRules(s)).noneMatch(r -> r.contains("evil/grab") && r.contains(VICTIM_POD));
  }

  @Test
  void theEndpointSliceControllersLabelIsNotBelievedOnASelectorlessService() {
    // Anyone who may write EndpointSlices may write the label too; for a Service without a selector that
    // controller writes nothing, so the label is forged.
    DesiredState s = withVictim(withAttacker(cluster(), EndpointSliceInfo.ENDPOINTSLICE_CONTROLLER, Optional.empty()))
        .plan(NODE);

    assertThat(snat(s)).containsExactly(VICTIM_POD + " -> 5.5.5.5 shop/web");
    assertThat(skipped(s, "grab")).singleElement().asString()
        .contains("labelled as the EndpointSlice controller's, but the Service has no selector");
  }

  @Test
  void mirroredSlicesAreHandWrittenEndpointsAndNeedTheAdminsTrust() {
    Fixture f = withAttacker(cluster(), EndpointSliceInfo.MIRRORING_CONTROLLER, Optional.empty());
    assertThat(f.plan(NODE).snat()).isEmpty();
    assertThat(skipped(f.plan(NODE), "grab")).singleElement().asString()
        .contains("a copy of a hand-written Endpoints object");

    DesiredState trusted = f.config(PlanConfig.defaults()
        .withEndpointTrust(new EndpointTrust(Set.of(EndpointSliceInfo.MIRRORING_CONTROLLER)))).plan(NODE);

    assertThat(snat(trusted)).containsExactly(VICTIM_POD + " -> 6.6.6.6 evil/grab");
  }

  @Test
  void aPodTargetRefOfAnotherNamespaceIsRefusedEvenFromATrustedManager() {
    Fixture f = withAttacker(cluster(), "kube-vip", pod("shop"))
        .config(PlanConfig.defaults().withEndpointTrust(new EndpointTrust(Set.of("kube-vip"))));

    DesiredState s = f.plan(NODE);

    assertThat(s.snat()).isEmpty();
    assertThat(skipped(s, "grab")).singleElement().asString()
        .isEqualTo(VICTIM_POD + ": its targetRef is a Pod of namespace shop, not of the Service's namespace evil"
            + " (listed by EndpointSlice evil/grab-1): never taken");

    // The same manager's endpoint of a Pod in the Service's own namespace is taken.
    DesiredState own = withAttacker(cluster(), "kube-vip", pod("evil"))
        .config(PlanConfig.defaults().withEndpointTrust(new EndpointTrust(Set.of("kube-vip")))).plan(NODE);
    assertThat(snat(own)).containsExactly(VICTIM_POD + " -> 6.6.6.6 evil/grab");
  }

  @Test
  void aSliceWithoutAManagerLabelIsRefused() {
    DesiredState s = withAttacker(cluster(), "", Optional.empty()).plan(NODE);

    assertThat(s.snat()).isEmpty();
    assertThat(skipped(s, "grab")).singleElement().asString()
        .contains("has no endpointslice.kubernetes.io/managed-by label");
  }
}
