package io.egressservice.explain;

/** A question explain cannot answer as asked (an address not of this node, an unknown pod): the user's to fix. */
public final class ExplainException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public ExplainException(String message) {
    super(message);
  }
}
