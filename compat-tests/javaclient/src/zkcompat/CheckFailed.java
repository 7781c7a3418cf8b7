package zkcompat;

/** Thrown by an assertion that does not hold; its message is the reason. */
final class CheckFailed extends RuntimeException {
    private static final long serialVersionUID = 1L;

    CheckFailed(String message) {
        super(message);
    }
}
