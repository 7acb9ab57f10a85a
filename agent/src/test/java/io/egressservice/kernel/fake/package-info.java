/**
 * An in-memory {@link io.egressservice.kernel.Kernel} for tests without privileges: {@link
 * io.egressservice.kernel.fake.FakeKernel}, a model of what the agent uses of Linux rather than a mock. It refuses
 * what the kernel refuses (EEXIST, ENOENT/ESRCH, ENODEV, EBUSY, EINVAL where the agent can meet them), applies an
 * nftables document all or nothing, moves the ruleset generation on each commit, announces every change (the agent's
 * and those made {@linkplain io.egressservice.kernel.fake.FakeRouting#byHand() by hand}) on the subscriptions' own
 * threads, and prints its state as canonical text ({@link io.egressservice.kernel.fake.FakeKernel#dump()}, {@link
 * io.egressservice.kernel.fake.KernelDump}).
 *
 * <p>{@code FakeKernelConformanceNetnsTest} keeps it honest: the same operations on Linux in a throwaway namespace
 * and on the fake must give the same observations, refusals and dumps. A behaviour the fake models is added there
 * first.
 *
 * <p>Typical use:
 *
 * <pre>{@code
 * FakeKernel kernel = FakeKernel.create("node-a");
 * kernel.routing().byHand().addRoute(Route.of(V4, 100, RouteType.BLACKHOLE, Optional.of(prefix)));
 * try (Dataplane dp = Dataplane.open(kernel, 5000, 201)) {
 *   dp.reconcile(desired);
 *   assertThat(kernel.dump()).contains("rule ip 5000: from 10.128.0.5 lookup 100 proto 201");
 * }
 * }</pre>
 */
package io.egressservice.kernel.fake;
