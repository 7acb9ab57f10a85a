package io.egressservice.dataplane;

import io.egressservice.kernel.linux.LinuxKernel;
import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.netlink.NetnsThread;
import io.egressservice.netlink.RtNetlink;
import io.egressservice.testing.Netns;
import io.egressservice.testing.NetnsFixture;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Which uplinks of marked networks filter reverse paths strictly, and the
 * src_valid_mark write through rtnetlink, against the kernel's own /proc/sys view of the namespace.
 * Uplinks: up1 (table 101), up2 (table 100); lan is in no marked table.
 */
class ReversePathNetnsTest {
  @RegisterExtension
  final NetnsFixture kernel = new NetnsFixture("rpf");
  private Netns ns;
  private NetnsThread thread;
  private RtNetlink nl;
  private LinuxKernel linux;

  @BeforeEach
  void setUp() {
    ns = kernel.ns();
    for (String dev : List.of("up1", "up2", "lan")) {
      ns.exec("ip", "link", "add", dev, "type", "veth", "peer", "name", dev + "-peer");
      ns.exec("ip", "link", "set", dev, "up");
    }
    ns.exec("ip", "addr", "add", "172.16.1.1/24", "dev", "up1");
    ns.exec("ip", "addr", "add", "172.16.2.1/24", "dev", "up2");
    ns.exec("ip", "route", "add", "default", "via", "172.16.1.2", "table", "101");
    ns.exec("ip", "route", "add", "default", "via", "172.16.2.2", "table", "100");
    thread = kernel.thread();
    nl = kernel.closeLater(RtNetlink.open(thread));
    linux = kernel.closeLater(LinuxKernel.on(thread));
  }

  private void set(String device, String setting, int value) {
    ns.execWithInput(value + "\n", "tee", "/proc/sys/net/ipv4/conf/" + device + "/" + setting);
  }

  private String get(String device, String setting) {
    return ns.exec("cat", "/proc/sys/net/ipv4/conf/" + device + "/" + setting).trim();
  }

  private ReversePath.State observe(Long... tables) {
    return ReversePath.observe(linux, nl.listLinks(), List.of(tables));
  }

  @Test
  void withoutFilteringNothingIsNeeded() {
    assertThat(observe(100L, 101L)).isEqualTo(ReversePath.State.NONE);
  }

  @Test
  void strictFilteringByAllOrByTheDeviceCountsLooseDoesNot() {
    set("up2", "rp_filter", 1);
    set("up1", "rp_filter", 2);
    ReversePath.State s = observe(100L, 101L);
    assertThat(s.strictUplinks()).containsExactly("up2");
    assertThat(s.needSrcValidMark()).containsOnlyKeys("up2");

    set("all", "rp_filter", 1); // the larger of all and the device: up1's 2 now wins, still loose
    assertThat(observe(100L, 101L).strictUplinks()).containsExactly("up2");
    set("up1", "rp_filter", 0);
    assertThat(observe(100L, 101L).strictUplinks()).containsExactlyInAnyOrder("up1", "up2");
    assertThat(observe(100L).strictUplinks()).as("only the uplinks of the given tables").containsExactly("up2");
  }

  @Test
  void srcValidMarkIsWrittenOnTheDeviceOnlyAndThenNoLongerNeeded() {
    set("all", "rp_filter", 1);
    ReversePath.State s = observe(100L);
    assertThat(s.needSrcValidMark()).containsOnlyKeys("up2");

    assertThat(ReversePath.enableSrcValidMark(nl, "up2", s.needSrcValidMark().get("up2"))).isEmpty();

    assertThat(get("up2", "src_valid_mark")).isEqualTo("1");
    assertThat(get("up1", "src_valid_mark")).isEqualTo("0");
    assertThat(get("all", "src_valid_mark")).isEqualTo("0");
    assertThat(observe(100L)).isEqualTo(new ReversePath.State(Set.of("up2"), Map.of()));
  }

  @Test
  void srcValidMarkOnAllAlreadyCovers() {
    set("all", "rp_filter", 1);
    set("all", "src_valid_mark", 1);
    assertThat(observe(100L).needSrcValidMark()).isEmpty();
  }

  @Test
  void aDeviceThatIsGoneIsReportedNotThrown() {
    set("all", "rp_filter", 1);
    int index = observe(100L).needSrcValidMark().get("up2");
    ns.exec("ip", "link", "del", "up2");
    assertThat(ReversePath.enableSrcValidMark(nl, "up2", index)).hasValueSatisfying(m ->
        assertThat(m).contains("cannot set net.ipv4.conf.up2.src_valid_mark=1"));
  }
}
