package io.egressservice.objects;

/** Input objects that cannot be used; the message names the file, the object and what is wrong. */
public final class ObjectsException extends Exception {
  private static final long serialVersionUID = 1L;

  public ObjectsException(String message) {
    super(message);
  }

  public ObjectsException(String message, Throwable cause) {
    super(message, cause);
  }
}
