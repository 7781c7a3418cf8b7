import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;

/**
 * Apache Curator 5.4 compatibility suite. Usage: CuratorSuite HOST:PORT
 *
 * Runs every check in order against the server, prints "PASS name" or
 * "FAIL name: reason" per check and finally "N passed, M failed"; the exit
 * status is 0 only if nothing failed. Each check has its own time limit and
 * its own path prefix under /curator-suite-RUNID, and closes the clients it
 * opened; the whole run is bounded by SUITE_BUDGET_MS.
 */
public final class CuratorSuite {
    static final long CHECK_TIMEOUT_MS = 25_000;
    static final long SUITE_BUDGET_MS = 85_000;

    private record Entry(String name, Check check) {
    }

    private static final List<Entry> CHECKS = new ArrayList<>();

    static void add(String name, Check check) {
        CHECKS.add(new Entry(name, check));
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1 || !args[0].contains(":")) {
            System.err.println("usage: CuratorSuite HOST:PORT");
            System.exit(2);
        }
        String addr = args[0];
        String root = "/curator-suite-" + Long.toHexString(System.currentTimeMillis()) + "-"
                + Long.toHexString(ProcessHandle.current().pid());

        ClientChecks.register();
        LockChecks.register();
        LeaderChecks.register();
        CoordinationChecks.register();
        CacheChecks.register();
        NodeChecks.register();

        // An admin client creates the suite root and each check's base as persistent nodes, so the
        // containers that recipes create below them never take a check's base path away.
        CuratorFramework admin = CuratorFrameworkFactory.builder().connectString(addr)
                .sessionTimeoutMs(Ctx.SESSION_MS).connectionTimeoutMs(Ctx.CONNECT_MS)
                .retryPolicy(new ExponentialBackoffRetry(100, 5, 1000)).build();
        admin.start();

        long start = System.nanoTime();
        int passed = 0;
        int failed = 0;
        ExecutorService pool = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "check");
            t.setDaemon(true);
            return t;
        });
        int index = 0;
        for (Entry e : CHECKS) {
            index++;
            long elapsed = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            String failure;
            if (elapsed > SUITE_BUDGET_MS) {
                failure = "not run: suite time budget of " + SUITE_BUDGET_MS + " ms exhausted";
            } else {
                long limit = Math.min(CHECK_TIMEOUT_MS, SUITE_BUDGET_MS - elapsed + 1_000);
                Ctx ctx = new Ctx(addr, root + "/c" + index);
                failure = prepare(admin, ctx.base);
                if (failure == null) {
                    failure = runOne(pool, e, ctx, limit);
                }
            }
            if (failure == null) {
                passed++;
                System.out.println("PASS " + e.name);
            } else {
                failed++;
                System.out.println("FAIL " + e.name + ": " + failure.replace('\n', ' '));
            }
            System.out.flush();
        }
        System.out.println(passed + " passed, " + failed + " failed");
        System.out.flush();
        System.exit(failed == 0 ? 0 : 1);
    }

    /** prepare creates base (and its parents) as persistent nodes; it returns null or the reason it could not. */
    private static String prepare(CuratorFramework admin, String base) {
        try {
            if (!admin.blockUntilConnected(Ctx.CONNECT_MS * 2, TimeUnit.MILLISECONDS)) {
                return "setup: admin client not connected within " + (Ctx.CONNECT_MS * 2) + " ms";
            }
            admin.create().creatingParentsIfNeeded().forPath(base);
            return null;
        } catch (Exception ex) {
            return "setup: create " + base + ": " + describe(ex);
        }
    }

    /** runOne runs a check with a time limit; it returns null on success, else the reason. */
    private static String runOne(ExecutorService pool, Entry e, Ctx ctx, long limitMs) {
        long t0 = System.nanoTime();
        Future<?> f = pool.submit(() -> {
            e.check.run(ctx);
            return null;
        });
        String failure = null;
        try {
            f.get(limitMs, TimeUnit.MILLISECONDS);
        } catch (TimeoutException te) {
            f.cancel(true);
            failure = "check timed out after " + limitMs + " ms";
        } catch (ExecutionException ee) {
            failure = describe(ee.getCause());
        } catch (InterruptedException ie) {
            failure = "interrupted";
        } finally {
            ctx.closeAll();
        }
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        System.err.println("[curator-suite] " + e.name + " took " + ms + " ms");
        return failure;
    }

    static String describe(Throwable t) {
        if (t instanceof CheckFailed) {
            return t.getMessage();
        }
        StringBuilder b = new StringBuilder(t.toString());
        StackTraceElement[] st = t.getStackTrace();
        for (int i = 0; i < Math.min(3, st.length); i++) {
            b.append(" at ").append(st[i]);
        }
        if (t.getCause() != null && t.getCause() != t) {
            b.append(" caused by ").append(t.getCause());
        }
        return b.toString();
    }
}
