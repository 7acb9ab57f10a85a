/**
 * The reconcile loop the node agent and the allocator share ({@link io.egressservice.reconcile.ReconcileLoop}): one
 * worker thread, triggers coalesced into one reconcile, pacing, the periodic resync, one retry backoff, liveness. It
 * knows what a reconcile is only as a function its owner gives it, so it sits below both ({@code controller} and
 * {@code allocator} are siblings; neither should lean on the other's package) and uses nothing of ours.
 */
package io.egressservice.reconcile;
