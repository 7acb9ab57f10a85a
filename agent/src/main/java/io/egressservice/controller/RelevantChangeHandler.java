package io.egressservice.controller;

import io.egressservice.objects.ChangeFeed;
import io.egressservice.objects.PlanInputs;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * Records every change of plan input in the {@link ChangeFeed} (a Service may come before its EgressService),
 * and triggers a reconcile only for a change the plan can see: the object's plan input (its projection
 * to {@link PlanInputs}) changed, and the object concerns an EgressService. A cluster's churn of
 * unrelated EndpointSlices, or Node status heartbeats, then costs no reconcile.
 */
final class RelevantChangeHandler<T extends HasMetadata> implements ResourceEventHandler<T> {
  private final Function<T, ?> planInput;
  private final Predicate<T> concernsEgressService;
  private final BiConsumer<T, Boolean> record;
  private final Consumer<Boolean> apiEvent;

  /**
   * @param record takes the object and whether it was deleted
   * @param apiEvent takes whether the event is relevant (it triggers a reconcile)
   */
  RelevantChangeHandler(Function<T, ?> planInput, Predicate<T> concernsEgressService, BiConsumer<T, Boolean> record,
      Consumer<Boolean> apiEvent) {
    this.planInput = planInput;
    this.concernsEgressService = concernsEgressService;
    this.record = record;
    this.apiEvent = apiEvent;
  }

  @Override
  public void onAdd(T obj) {
    record.accept(obj, false);
    apiEvent.accept(concernsEgressService.test(obj));
  }

  @Override
  public void onUpdate(T oldObj, T newObj) {
    boolean concerns = concernsEgressService.test(newObj) || concernsEgressService.test(oldObj);
    if (oldObj == newObj) {
      apiEvent.accept(false); // an informer's resync: nothing changed
      return;
    }
    boolean changed = !planInput.apply(oldObj).equals(planInput.apply(newObj));
    if (changed) {
      record.accept(newObj, false);
    }
    apiEvent.accept(concerns && changed);
  }

  @Override
  public void onDelete(T obj, boolean deletedFinalStateUnknown) {
    record.accept(obj, true);
    apiEvent.accept(concernsEgressService.test(obj));
  }
}
