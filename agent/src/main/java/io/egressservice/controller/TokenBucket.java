package io.egressservice.controller;

/** {@code capacity} tokens, one more every {@code refillNanos}; times are System.nanoTime values. Not thread-safe. */
final class TokenBucket {
  private final int capacity;
  private final long refillNanos;
  private double tokens;
  private long updated;

  TokenBucket(int capacity, long refillNanos, long now) {
    if (capacity < 1 || refillNanos < 1) {
      throw new IllegalArgumentException("a token bucket needs a capacity and a refill time");
    }
    this.capacity = capacity;
    this.refillNanos = refillNanos;
    this.tokens = capacity;
    this.updated = now;
  }

  private void refill(long now) {
    if (now > updated) {
      tokens = Math.min(capacity, tokens + (double) (now - updated) / refillNanos);
      updated = now;
    }
  }

  boolean available(long now) {
    refill(now);
    return tokens >= 1;
  }

  /** Takes a token if there is one. */
  boolean tryTake(long now) {
    refill(now);
    if (tokens < 1) {
      return false;
    }
    tokens -= 1;
    return true;
  }

  /** Nanoseconds until a token is there (0 when one is). */
  long nanosUntilToken(long now) {
    refill(now);
    return tokens >= 1 ? 0 : (long) Math.ceil((1 - tokens) * refillNanos);
  }

  /** Full: as if it had never been used (its state can be forgotten). */
  boolean full(long now) {
    refill(now);
    return tokens >= capacity;
  }
}
