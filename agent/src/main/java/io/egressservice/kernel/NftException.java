package io.egressservice.kernel;

/**
 * An nftables command failed, or libnftables could not be used. The message carries nft's own
 * error text and a summary of the commands of the failed transaction (which was not applied).
 */
public class NftException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final String nftError;

  public NftException(String message) {
    this(message, "", null);
  }

  public NftException(String message, Throwable cause) {
    this(message, "", cause);
  }

  public NftException(String message, String nftError, Throwable cause) {
    super(message, cause);
    this.nftError = nftError == null ? "" : nftError;
  }

  /** nft's error output verbatim, empty if the failure did not come from nft. */
  public String nftError() {
    return nftError;
  }

  /** nft reported ENOENT (an object that is not there). */
  public boolean isNotFound() {
    return nftError.contains("No such file or directory");
  }

  /** nft reported EPERM: the process lacks CAP_NET_ADMIN in the namespace. */
  public static final class PermissionDenied extends NftException {
    private static final long serialVersionUID = 1L;

    public PermissionDenied(String message, String nftError) {
      super(message, nftError, null);
    }
  }
}
