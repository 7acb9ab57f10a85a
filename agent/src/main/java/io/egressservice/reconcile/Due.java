package io.egressservice.reconcile;

/**
 * Why a reconcile runs: the cause (the owner's trigger name, or the loop's own {@link ReconcileLoop#STARTUP},
 * {@link ReconcileLoop#RESYNC} and {@link ReconcileLoop#RETRY}), and whether a change of the inputs is among the
 * triggers it takes.
 */
public record Due(String cause, boolean change) {}
