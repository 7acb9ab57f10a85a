package io.egressservice.dataplane;

/** The dataplane could not observe or change the kernel at all (privileges, namespace, libraries). */
public final class DataplaneException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public DataplaneException(String message, Throwable cause) {
    super(message, cause);
  }
}
