package zkcompat;

import java.util.Objects;
import org.apache.zookeeper.KeeperException;

/** Small assertions that throw CheckFailed with a readable reason. */
final class Assert {
    private Assert() {}

    static void that(boolean cond, String what) {
        if (!cond) {
            throw new CheckFailed(what);
        }
    }

    static void eq(Object want, Object got, String what) {
        if (!Objects.equals(want, got)) {
            throw new CheckFailed(what + ": want " + want + ", got " + got);
        }
    }

    /** An operation that should fail with a KeeperException. */
    interface Op {
        void run() throws Exception;
    }

    /** Runs op and returns the KeeperException it throws, which must carry code. */
    static KeeperException fails(KeeperException.Code code, String what, Op op) throws Exception {
        try {
            op.run();
        } catch (KeeperException e) {
            if (e.code() != code) {
                throw new CheckFailed(what + ": want " + code + ", got " + e.code() + " (" + e.getMessage() + ")");
            }
            return e;
        }
        throw new CheckFailed(what + ": want " + code + ", but it succeeded");
    }
}
