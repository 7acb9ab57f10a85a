package io.egressservice.cli;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks a flag whose default a variable of the environment overrides ({@link EnvironmentDefaults}): by default
 * {@code EGRESS_AGENT_} and the flag's longest name ({@code --metrics-port}: {@code EGRESS_AGENT_METRICS_PORT}),
 * or {@link #value} where the deployments have always set another one. The flag's own {@code defaultValue} is what
 * applies when the variable is unset.
 */
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.FIELD, ElementType.METHOD})
@interface FromEnvironment {
  /** The variable, when it is not the one named after the flag. */
  String value() default "";
}
