/**
 * The startup probe of the kernel's features: {@link io.egressservice.probe.KernelProbe} tries each {@link
 * io.egressservice.probe.Feature} the agent depends on through a {@link io.egressservice.probe.FeatureCheck} (the
 * real ones: {@link io.egressservice.probe.ScratchNamespace}, in an anonymous network namespace, where CAP_SYS_ADMIN
 * allows one; else {@link io.egressservice.probe.NodeNamespaceCheck}, in the node's own namespace with writes no
 * packet can meet, one probe at a time per namespace through {@link io.egressservice.probe.ProbeLock}), then admits
 * the configuration, with a fallback where one exists, or refuses to start naming what is missing. The features and
 * their first versions are listed in docs/kernel-requirements.md.
 */
package io.egressservice.probe;
