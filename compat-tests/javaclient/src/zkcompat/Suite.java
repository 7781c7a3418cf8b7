package zkcompat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Runs named checks one after the other, each in its own thread with a time
 * limit, and prints one PASS or FAIL line per check and the closing
 * "N passed, M failed" line. A check passes when its body returns normally.
 */
final class Suite {
    /** The body of one check. */
    interface Body {
        void run() throws Exception;
    }

    private static final class Check {
        final String name;
        final Body body;
        final boolean required;

        Check(String name, Body body, boolean required) {
            this.name = name;
            this.body = body;
            this.required = required;
        }
    }

    private final List<Check> checks = new ArrayList<>();
    private final long perCheckMs;
    private final long deadlineNanos;
    private int passed;
    private int failed;

    Suite(long perCheckMs, long totalMs) {
        this.perCheckMs = perCheckMs;
        this.deadlineNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(totalMs);
    }

    void add(String name, Body body) {
        checks.add(new Check(name, body, false));
    }

    /** Adds a check that the later ones depend on: if it fails, they fail unrun. */
    void addRequired(String name, Body body) {
        checks.add(new Check(name, body, true));
    }

    /** Runs every check and prints the summary; returns the failure count. */
    int runAll() {
        String blocked = null;
        for (Check c : checks) {
            if (blocked != null) {
                fail(c.name, "not run: required check failed: " + blocked);
                continue;
            }
            long left = TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime());
            if (left <= 0) {
                fail(c.name, "suite time limit reached before this check ran");
                continue;
            }
            if (!runOne(c, Math.min(perCheckMs, left)) && c.required) {
                blocked = c.name;
            }
        }
        System.out.println(passed + " passed, " + failed + " failed");
        System.out.flush();
        return failed;
    }

    /** Runs c and reports whether it passed. */
    private boolean runOne(Check c, long limitMs) {
        // A fresh single-use thread per check: a check stuck in a blocking
        // client call is abandoned (daemon thread) and the suite goes on.
        ExecutorService ex = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "check");
            t.setDaemon(true);
            return t;
        });
        try {
            Future<?> f = ex.submit(() -> {
                c.body.run();
                return null;
            });
            f.get(limitMs, TimeUnit.MILLISECONDS);
            passed++;
            System.out.println("PASS " + c.name);
            return true;
        } catch (TimeoutException e) {
            fail(c.name, "timed out after " + limitMs + " ms");
        } catch (java.util.concurrent.ExecutionException e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            fail(c.name, describe(cause));
        } catch (InterruptedException e) {
            fail(c.name, "interrupted");
            Thread.currentThread().interrupt();
        } finally {
            ex.shutdownNow();
            System.out.flush();
        }
        return false;
    }

    private void fail(String name, String reason) {
        failed++;
        System.out.println("FAIL " + name + ": " + reason.replace('\n', ' '));
    }

    private static String describe(Throwable t) {
        if (t instanceof CheckFailed) {
            return t.getMessage();
        }
        StringBuilder b = new StringBuilder(t.toString());
        StackTraceElement[] st = t.getStackTrace();
        for (StackTraceElement e : st) {
            if (e.getClassName().startsWith("zkcompat.")) {
                b.append(" at ").append(e.getClassName()).append(':').append(e.getLineNumber());
                break;
            }
        }
        return b.toString();
    }
}
