package io.egressservice.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import java.math.BigInteger;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * OVN-Kubernetes' masquerade subnet is one setting per family; the agent needs two things from it: the subnet as
 * an in-cluster prefix ({@code EGRESS_AGENT_EXCLUDE_CIDR}) and the host's ETP=Local masquerade IP
 * ({@code EGRESS_AGENT_OVN_MASQUERADE_IPS}), which OVN-Kubernetes derives as the subnet's network address + 3
 * (go-controller/pkg/config: +1 OVN, +2 host, +3 host ETP=Local). Every preset, of the chart and of deploy/'s
 * components, sets both from the same subnet: a mix (one subnet excluded, another's IP set) leaves the reply rule
 * matching nothing.
 */
class OvnMasqueradePresetTest {
  /** The preset: upstream OVN-Kubernetes' defaults (OpenShift has none: the agent cannot run beside it). */
  static final Map<String, List<String>> SUBNETS = Map.of(
      "upstream", List.of("169.254.169.0/29", "fd69::/125"));

  /** The network address + 3, by address arithmetic (what OVN-Kubernetes' config does). */
  static InetAddress etpLocalIp(String cidr) throws Exception {
    String[] parts = cidr.split("/");
    byte[] address = InetAddress.getByName(parts[0]).getAddress();
    BigInteger plus3 = new BigInteger(1, address).add(BigInteger.valueOf(3));
    byte[] raw = plus3.toByteArray();
    byte[] out = new byte[address.length];
    System.arraycopy(raw, Math.max(0, raw.length - out.length), out, Math.max(0, out.length - raw.length),
        Math.min(raw.length, out.length));
    return InetAddress.getByAddress(out);
  }

  /** EXCLUDE_CIDR and OVN_MASQUERADE_IPS of the DaemonSet's agent container. */
  static Map<String, String> ovnEnv(List<JsonNode> objects) {
    Map<String, String> env = new LinkedHashMap<>();
    ManifestChecks.containers(ManifestChecks.daemonSet(objects)).get(0).path("env").forEach(e -> {
      String name = e.path("name").asText();
      if (name.equals("EGRESS_AGENT_EXCLUDE_CIDR") || name.equals("EGRESS_AGENT_OVN_MASQUERADE_IPS")) {
        env.put(name, e.path("value").asText());
      }
    });
    return env;
  }

  /** The masquerade IPs are exactly the +3 of the excluded masquerade subnets, one per family. */
  static void assertCoherent(String what, Map<String, String> env, List<String> subnets) throws Exception {
    List<String> excluded = Arrays.asList(env.getOrDefault("EGRESS_AGENT_EXCLUDE_CIDR", "").split(","));
    assertThat(excluded).as("%s: the masquerade subnets are in-cluster", what).containsAll(subnets);
    List<InetAddress> expected = new ArrayList<>();
    for (String subnet : subnets) {
      expected.add(etpLocalIp(subnet));
    }
    List<InetAddress> set = new ArrayList<>();
    for (String ip : env.getOrDefault("EGRESS_AGENT_OVN_MASQUERADE_IPS", "").split(",")) {
      set.add(InetAddress.getByName(ip));
    }
    assertThat(set).as("%s: the ETP=Local masquerade IPs of the excluded subnets %s (EXCLUDE_CIDR %s)", what, subnets,
        env.get("EGRESS_AGENT_EXCLUDE_CIDR")).containsExactlyElementsOf(expected);
  }

  @Test
  void chartPresetsSetTheEtpLocalIpsOfTheSubnetsTheyExclude() throws Exception {
    for (Map.Entry<String, List<String>> preset : SUBNETS.entrySet()) {
      Map<String, String> env = ovnEnv(HelmChart.render(ChartTest.with(ChartTest.OVN,
          "ovnKubernetes.masqueradePreset", preset.getKey())));
      System.out.println("chart preset " + preset.getKey() + ": " + env);
      assertCoherent("chart preset " + preset.getKey(), env, preset.getValue());
    }
  }

  @Test
  void deployComponentsSetTheEtpLocalIpsOfTheSubnetsTheyExclude() throws Exception {
    Kustomize.unavailable().ifPresent(reason -> Assumptions.assumeTrue(false, reason));
    Map<String, String> upstream = ovnEnv(Kustomize.render("ovn-kubernetes"));
    System.out.println("deploy/components/ovn-kubernetes: " + upstream);
    assertCoherent("deploy/components/ovn-kubernetes", upstream, SUBNETS.get("upstream"));
  }

  @Test
  void chartDerivesTheEtpLocalIpOfACustomSubnetAsOvnKubernetesDoes() throws Exception {
    List<List<String>> custom = List.of(
        List.of("169.254.169.0/29", "fd69::/125"),
        List.of("100.64.0.8/29", "fd00:1:2::8/125"),
        List.of("10.255.0.0/16", "fd00:0:0:ff::/64"),
        List.of("169.254.0.248/29", "fd69::fff8/125"));
    for (List<String> subnets : custom) {
      Map<String, String> env = ovnEnv(HelmChart.render(ChartTest.with(ChartTest.OVN,
          "ovnKubernetes.masqueradePreset", "custom", "ovnKubernetes.masqueradeSubnet.v4", subnets.get(0),
          "ovnKubernetes.masqueradeSubnet.v6", subnets.get(1), "agent.excludeCIDRs[0]", "192.0.2.0/24")));
      assertCoherent("custom " + subnets, env, subnets);
      assertThat(env.get("EGRESS_AGENT_EXCLUDE_CIDR")).as("the configured exclusions stay").startsWith("192.0.2.0/24,");
    }
  }

  @Test
  void chartRefusesAMasqueradeSubnetOvnKubernetesWouldRefuse() {
    Map<String, String> refused = Map.of(
        "169.254.169.0/30", "at most /29",
        "fd69::/126", "at most /125",
        "169.254.169.4/29", "not its network address",
        "fd69::4/125", "not its network address");
    refused.forEach((subnet, why) -> {
      boolean v6 = subnet.contains(":");
      assertThatThrownBy(() -> HelmChart.render(ChartTest.with(ChartTest.OVN,
          "ovnKubernetes.masqueradePreset", "custom",
          "ovnKubernetes.masqueradeSubnet.v4", v6 ? "169.254.169.0/29" : subnet,
          "ovnKubernetes.masqueradeSubnet.v6", v6 ? subnet : "fd69::/125")))
          .as(subnet).hasMessageContaining(subnet).hasMessageContaining(why);
    });
    assertThatThrownBy(() -> HelmChart.render(ChartTest.with(ChartTest.OVN,
        "ovnKubernetes.masqueradePreset", "custom", "ovnKubernetes.masqueradeSubnet.v4", "169.254.169.0/29")))
        .hasMessageContaining("needs both");
  }
}
