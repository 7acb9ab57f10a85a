package io.egressservice.probe;

import java.util.Optional;

/**
 * The seam the probe tries each feature through: the real ones ({@link ScratchNamespace}, {@link NodeNamespaceCheck})
 * ask the kernel, a test's answers as an older kernel would.
 */
public interface FeatureCheck {
  /** Tries {@code feature}; empty when it works, else why not (the kernel's or libnftables' words). */
  Optional<String> missing(Feature feature);

  /** The kernel release the answers come from ({@code uname -r}), for messages. */
  String kernelRelease();
}
