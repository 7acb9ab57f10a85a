package io.egressservice.netlink;

/**
 * A failed netlink (or namespace) operation, typed by errno so callers can branch on the kind of
 * failure without reading numbers. Messages say what was attempted, where, and what to do about it.
 */
public class NetlinkException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public static final int EPERM = 1;
  public static final int ENOENT = 2;
  public static final int ESRCH = 3;
  public static final int EACCES = 13;
  public static final int EEXIST = 17;
  public static final int ENODEV = 19;
  public static final int EINVAL = 22;
  public static final int EOPNOTSUPP = 95;
  public static final int EAFNOSUPPORT = 97;
  public static final int ENOBUFS = 105;

  private final int errno;
  private final String request;

  public NetlinkException(int errno, String message) {
    this(errno, message, null);
  }

  /** {@code request} describes what was asked of the kernel, e.g. "add ip rule '5000: from 10.0.0.5 lookup 100'". */
  public NetlinkException(int errno, String message, String request) {
    super(message);
    this.errno = errno;
    this.request = request;
  }

  /** The request that failed, as text (e.g. "add ip rule '...'"), when known. */
  public java.util.Optional<String> request() {
    return java.util.Optional.ofNullable(request);
  }

  /** The kernel's errno, positive; 0 when the failure did not come from the kernel. */
  public int errno() {
    return errno;
  }

  /**
   * Maps an errno to the typed exception, with a message naming the operation and the namespace,
   * e.g. "permission denied: CAP_NET_ADMIN is required to add ip rule ... in netns X".
   */
  public static NetlinkException fromErrno(int errno, String operation, String where) {
    return fromErrno(errno, operation, where, "");
  }

  /**
   * As {@link #fromErrno(int, String, String)}, adding the kernel's own explanation (the netlink
   * extended ACK message, e.g. "Backward goto not supported") when there is one.
   */
  public static NetlinkException fromErrno(int errno, String operation, String where, String kernelMessage) {
    String kernel = kernelMessage == null || kernelMessage.isEmpty() ? "" : " (kernel: " + kernelMessage + ")";
    return switch (errno) {
      case EPERM, EACCES -> new PermissionDenied(
          errno,
          "permission denied: CAP_NET_ADMIN is required to " + operation + " in " + where + kernel,
          operation);
      case EEXIST -> new AlreadyExists(errno, operation + " in " + where + ": already exists" + kernel, operation);
      case ENOENT, ESRCH, ENODEV -> new NotFound(
          errno, operation + " in " + where + ": no such object" + kernel, operation);
      case EINVAL -> new InvalidArgument(
          errno, operation + " in " + where + ": invalid argument (the kernel refused the request)" + kernel,
          operation);
      default -> new NetlinkException(
          errno, operation + " in " + where + ": " + ErrnoNames.describe(errno) + kernel, operation);
    };
  }

  /** EPERM / EACCES: the process lacks CAP_NET_ADMIN (or CAP_SYS_ADMIN to enter a namespace). */
  public static final class PermissionDenied extends NetlinkException {
    private static final long serialVersionUID = 1L;

    public PermissionDenied(int errno, String message) {
      super(errno, message);
    }

    public PermissionDenied(int errno, String message, String request) {
      super(errno, message, request);
    }
  }

  /** EEXIST: the object to add is already there. */
  public static final class AlreadyExists extends NetlinkException {
    private static final long serialVersionUID = 1L;

    public AlreadyExists(int errno, String message) {
      super(errno, message);
    }

    public AlreadyExists(int errno, String message, String request) {
      super(errno, message, request);
    }
  }

  /** ENOENT / ESRCH / ENODEV: the object to delete or use is not there. */
  public static final class NotFound extends NetlinkException {
    private static final long serialVersionUID = 1L;

    public NotFound(int errno, String message) {
      super(errno, message);
    }

    public NotFound(int errno, String message, String request) {
      super(errno, message, request);
    }
  }

  /** EINVAL: the kernel refused the request as malformed. */
  public static final class InvalidArgument extends NetlinkException {
    private static final long serialVersionUID = 1L;

    public InvalidArgument(int errno, String message) {
      super(errno, message);
    }

    public InvalidArgument(int errno, String message, String request) {
      super(errno, message, request);
    }
  }

  /** The named network namespace does not exist. */
  public static final class NoSuchNamespace extends NetlinkException {
    private static final long serialVersionUID = 1L;

    public NoSuchNamespace(String message) {
      super(ENOENT, message);
    }
  }
}
