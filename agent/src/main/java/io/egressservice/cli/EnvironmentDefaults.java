package io.egressservice.cli;

import java.lang.reflect.AnnotatedElement;
import java.util.Locale;
import java.util.Optional;
import java.util.function.UnaryOperator;
import picocli.CommandLine.IDefaultValueProvider;
import picocli.CommandLine.Model.ArgSpec;
import picocli.CommandLine.Model.OptionSpec;

/**
 * The one place a flag's default is read from the environment, which is how the chart and deploy/ configure the
 * agent and the allocator: a flag marked {@link FromEnvironment} takes the variable's value when it is set (empty
 * included), else its own {@code defaultValue}; other flags never read the environment. {@code --help} shows the
 * default that applies ({@code ${DEFAULT-VALUE}}), and {@code man}'s ENVIRONMENT lists the variables
 * ({@link #variable}).
 */
final class EnvironmentDefaults implements IDefaultValueProvider {
  static final String PREFIX = "EGRESS_AGENT_";

  private final UnaryOperator<String> environment;

  /** {@code environment}: a variable's value, or null when it is unset ({@code System::getenv}). */
  EnvironmentDefaults(UnaryOperator<String> environment) {
    this.environment = environment;
  }

  static EnvironmentDefaults fromProcess() {
    return new EnvironmentDefaults(System::getenv);
  }

  @Override
  public String defaultValue(ArgSpec arg) {
    return variable(arg).map(environment).orElse(null);
  }

  /** The variable that sets this flag's default, if it has one. */
  static Optional<String> variable(ArgSpec arg) {
    if (!(arg instanceof OptionSpec option) || !(option.userObject() instanceof AnnotatedElement element)) {
      return Optional.empty();
    }
    FromEnvironment marked = element.getAnnotation(FromEnvironment.class);
    if (marked == null) {
      return Optional.empty();
    }
    return Optional.of(marked.value().isEmpty() ? variableFor(option.longestName()) : marked.value());
  }

  /** {@code --metrics-port}: {@code EGRESS_AGENT_METRICS_PORT}. */
  static String variableFor(String flag) {
    return PREFIX + flag.replaceFirst("^-+", "").replace('-', '_').toUpperCase(Locale.ROOT);
  }
}
