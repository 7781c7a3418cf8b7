/** Thrown by a check's own assertions; its message becomes the FAIL reason. */
final class CheckFailed extends RuntimeException {
    CheckFailed(String message) {
        super(message);
    }
}
