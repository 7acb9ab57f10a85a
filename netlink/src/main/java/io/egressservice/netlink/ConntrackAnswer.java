package io.egressservice.netlink;

/**
 * How the kernel answered one conntrack request: done, refused with an errno, or not at all within the socket's
 * 2 s. A refusal is a value, not an exception: a caller of many requests goes on with the next one, and a caller of a
 * filtered dump reads the errno to learn that the kernel does not take that form.
 *
 * @param errno the kernel's errno (positive), 0 when done or unanswered
 * @param answered whether an answer came
 */
public record ConntrackAnswer(int errno, boolean answered) {
  public static final ConntrackAnswer DONE = new ConntrackAnswer(0, true);
  public static final ConntrackAnswer NO_ANSWER = new ConntrackAnswer(0, false);

  public ConntrackAnswer {
    if (errno < 0 || (errno != 0 && !answered)) {
      throw new IllegalArgumentException("an errno is positive and comes with an answer: " + errno);
    }
  }

  /** The kernel refused the request with {@code errno}. */
  public static ConntrackAnswer refused(int errno) {
    if (errno <= 0) {
      throw new IllegalArgumentException("a refusal has a positive errno: " + errno);
    }
    return new ConntrackAnswer(errno, true);
  }

  /** The request was carried out. */
  public boolean done() {
    return answered && errno == 0;
  }

  /** A delete found no such entry (ENOENT): it ended meanwhile, which is what the delete was for. */
  public boolean gone() {
    return errno == NetlinkException.ENOENT;
  }

  /** For messages: "errno 22", "no answer within 2 s", "done". */
  public String describe() {
    return !answered ? "no answer within 2 s" : errno != 0 ? "errno " + errno : "done";
  }
}
