package io.egressservice.testing;

import java.lang.reflect.Field;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * What fabric8's {@code @EnableKubernetesMockClient} injected into the test instance (its mock server, its client),
 * for fixtures registered with {@code @RegisterExtension}: those run after the class-level extension, so the
 * fields are set when their {@code beforeEach} runs.
 */
public final class MockApiFields {
  private MockApiFields() {}

  /** The test instance's field of {@code type} (declared on its class or a superclass). */
  public static <T> T injected(ExtensionContext context, Class<T> type) {
    Object test = context.getRequiredTestInstance();
    for (Class<?> c = test.getClass(); c != Object.class; c = c.getSuperclass()) {
      for (Field f : c.getDeclaredFields()) {
        if (f.getType() == type) {
          try {
            f.setAccessible(true);
            Object value = f.get(test);
            if (value != null) {
              return type.cast(value);
            }
          } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
          }
        }
      }
    }
    throw new IllegalStateException(test.getClass().getSimpleName() + " has no " + type.getSimpleName()
        + " injected: annotate it with @EnableKubernetesMockClient and declare the field");
  }
}
