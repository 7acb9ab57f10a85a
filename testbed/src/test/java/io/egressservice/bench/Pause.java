package io.egressservice.bench;

/** A sleep that keeps the interrupt. */
final class Pause {
  private Pause() {}

  static void ms(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }
}
