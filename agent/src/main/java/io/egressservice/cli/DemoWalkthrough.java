package io.egressservice.cli;

import java.io.PrintWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;

/**
 * The demo ({@code new Demo(out)}, {@code run()}, {@code close()}), reached by name: cli must not import the test
 * infrastructure above it (LayeringTest), and only the full jar carries it.
 */
final class DemoWalkthrough {
  /** The demo's class: it lives with the namespace testbed, above cli, so cli names it instead of importing it. */
  static final String DEMO_CLASS = "io.egressservice.demo.Demo";

  private final AutoCloseable demo;
  private final Method run;

  private DemoWalkthrough(AutoCloseable demo, Method run) {
    this.demo = demo;
    this.run = run;
  }

  /** The demo, ready to run: its class, constructor and run() are all found here, or not at all. */
  static DemoWalkthrough load(PrintWriter out) {
    try {
      Class<?> demoClass = Class.forName(DEMO_CLASS);
      Method run = demoClass.getMethod("run");
      if (run.getReturnType() != boolean.class) {
        throw new NoSuchMethodException(DEMO_CLASS + ".run() returns " + run.getReturnType() + ", not boolean");
      }
      return new DemoWalkthrough((AutoCloseable) demoClass.getConstructor(PrintWriter.class).newInstance(out), run);
    } catch (InvocationTargetException e) {
      throw unwrapped(e);
    } catch (ReflectiveOperationException | ClassCastException e) {
      throw new IllegalStateException("this jar has no runnable demo (" + DEMO_CLASS + "): " + e, e);
    }
  }

  /** Whether every step saw what it should. */
  boolean run() {
    try {
      return (Boolean) run.invoke(demo);
    } catch (InvocationTargetException e) {
      throw unwrapped(e);
    } catch (IllegalAccessException e) {
      throw new IllegalStateException("the demo cannot be run: " + e, e);
    }
  }

  /** The class of the demo at hand. */
  Class<?> demoClass() {
    return demo.getClass();
  }

  /** Idempotent, as the demo's own close(): called on Ctrl-C and after the run. */
  void close() {
    try {
      demo.close();
    } catch (RuntimeException e) {
      throw e;
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  /** What the demo threw, as it threw it. */
  private static RuntimeException unwrapped(InvocationTargetException e) {
    if (e.getCause() instanceof RuntimeException r) {
      return r;
    }
    if (e.getCause() instanceof Error err) {
      throw err;
    }
    return new IllegalStateException(e.getCause());
  }
}
