/**
 * The startup probe of the kernel's features: {@link io.egressservice.kernel.KernelProbe} tries each {@link
 * io.egressservice.kernel.Feature} the agent depends on through a {@link io.egressservice.kernel.FeatureCheck} (the
 * real one, {@link io.egressservice.kernel.ScratchNamespace}, in an anonymous network namespace), then admits the
 * configuration, with a fallback where one exists, or refuses to start naming what is missing. The features and
 * their first versions are listed in docs/kernel-requirements.md.
 */
package io.egressservice.kernel;
