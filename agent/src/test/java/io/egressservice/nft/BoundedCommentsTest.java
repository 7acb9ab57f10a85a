package io.egressservice.nft;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.model.ObjectRef;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * Over-long names, the comment itself: nft refuses a comment over 128 bytes, and one such element failed the
 * node's whole transaction. Comments are now bounded, stable and distinct per service.
 */
class BoundedCommentsTest {
  static final String NS63 = "n".repeat(63);

  @Test
  void aNameThatFitsIsTheCommentAsBefore() {
    ObjectRef web = new ObjectRef("default", "web");
    assertThat(ServiceComments.of(web)).isEqualTo("default/web");
    assertThat(ServiceComments.matches(web, "default/web")).isTrue();
    ObjectRef longest = new ObjectRef(NS63, "s".repeat(63)); // what an API server accepts for a Service: 127 bytes
    assertThat(ServiceComments.of(longest)).isEqualTo(longest.toString());
  }

  @Test
  void aLongerNameIsCutToNftsLimitAndEndsInAHashThatTellsServicesApart() {
    ObjectRef a = new ObjectRef(NS63, "x".repeat(200) + "a");
    ObjectRef b = new ObjectRef(NS63, "x".repeat(200) + "b");

    String ca = ServiceComments.of(a);
    String cb = ServiceComments.of(b);

    assertThat(ca.getBytes(StandardCharsets.UTF_8)).hasSize(EgressNftables.MAX_COMMENT_BYTES);
    assertThat(ca).startsWith(NS63 + "/xxx").matches(".*~[0-9a-f]{16}");
    assertThat(ca).isNotEqualTo(cb);
    assertThat(ServiceComments.of(new ObjectRef(NS63, "x".repeat(200) + "a"))).isEqualTo(ca);
    assertThat(ServiceComments.matches(a, ca)).isTrue();
    assertThat(ServiceComments.matches(b, ca)).isFalse();
    // the element it goes into accepts it (its constructor enforces the limit)
    new EgressNftables.SnatElement(io.egressservice.ip.IpPrefix.parse("10.0.0.1"),
        io.egressservice.ip.IpPrefix.parse("5.5.5.5"), ca);
  }

  @Test
  void multiByteNamesAreCutOnACharacterBoundary() {
    ObjectRef wide = new ObjectRef("ns", "é".repeat(100));

    String c = ServiceComments.of(wide);

    assertThat(c.getBytes(StandardCharsets.UTF_8).length).isLessThanOrEqualTo(EgressNftables.MAX_COMMENT_BYTES);
    assertThat(new String(c.getBytes(StandardCharsets.UTF_8), StandardCharsets.UTF_8)).isEqualTo(c);
    assertThat(c).doesNotContain("\uFFFD");
  }
}
