import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

/**
 * The context of one check: the server address, a path prefix of its own
 * (unique per suite run, so reruns against one server never collide), the
 * Curator clients it opened (each one is a separate ZooKeeper session and is
 * closed when the check ends), and the bounded-wait assertion helpers.
 */
final class Ctx {
    /** Session timeout asked for by ordinary clients (servers cap it at 20 ticks). */
    static final int SESSION_MS = 10_000;
    static final int CONNECT_MS = 5_000;

    final String addr;
    final String base;
    private final List<AutoCloseable> closers = Collections.synchronizedList(new ArrayList<>());

    Ctx(String addr, String base) {
        this.addr = addr;
        this.base = base;
    }

    /** path joins parts below this check's base path. */
    String path(String... parts) {
        StringBuilder b = new StringBuilder(base);
        for (String p : parts) {
            b.append('/').append(p);
        }
        return b.toString();
    }

    /** client starts a new Curator client (a new session) and waits until it is connected. */
    CuratorFramework client() throws Exception {
        return client(SESSION_MS);
    }

    CuratorFramework client(int sessionMs) throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.builder()
                .connectString(addr)
                .sessionTimeoutMs(sessionMs)
                .connectionTimeoutMs(CONNECT_MS)
                .retryPolicy(new ExponentialBackoffRetry(100, 5, 1000))
                .build();
        closers.add(c);
        c.start();
        if (!c.blockUntilConnected(CONNECT_MS * 2, TimeUnit.MILLISECONDS)) {
            throw new CheckFailed("client not connected to " + addr + " within " + (CONNECT_MS * 2) + " ms");
        }
        return c;
    }

    /** onClose registers something to close when the check ends (latest first). */
    <T extends AutoCloseable> T onClose(T c) {
        closers.add(c);
        return c;
    }

    /** closeAll closes everything registered, in reverse order, ignoring errors. */
    void closeAll() {
        List<AutoCloseable> copy;
        synchronized (closers) {
            copy = new ArrayList<>(closers);
            closers.clear();
        }
        Collections.reverse(copy);
        for (AutoCloseable c : copy) {
            try {
                c.close();
            } catch (Throwable ignored) {
                // best effort: the check's verdict is already decided
            }
        }
    }

    static void check(boolean cond, String fmt, Object... args) {
        if (!cond) {
            throw new CheckFailed(String.format(fmt, args));
        }
    }

    static void equal(Object want, Object got, String what) {
        if (want == null ? got != null : !want.equals(got)) {
            throw new CheckFailed(what + ": want " + want + ", got " + got);
        }
    }

    /** waitFor polls cond every 20 ms until it holds or timeoutMs passes, then fails with what. */
    static void waitFor(long timeoutMs, String what, BooleanSupplier cond) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (true) {
            if (cond.getAsBoolean()) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new CheckFailed("timed out after " + timeoutMs + " ms waiting for " + what);
            }
            Thread.sleep(20);
        }
    }

    /** Like waitFor, for conditions that talk to the server. */
    interface ZkCondition {
        boolean get() throws Exception;
    }

    static void waitForZk(long timeoutMs, String what, ZkCondition cond) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (true) {
            if (cond.get()) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new CheckFailed("timed out after " + timeoutMs + " ms waiting for " + what);
            }
            Thread.sleep(50);
        }
    }

    /** poll takes the next element of q within timeoutMs or fails. */
    static <T> T poll(BlockingQueue<T> q, long timeoutMs, String what) throws InterruptedException {
        T v = q.poll(timeoutMs, TimeUnit.MILLISECONDS);
        if (v == null) {
            throw new CheckFailed("timed out after " + timeoutMs + " ms waiting for " + what);
        }
        return v;
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static String str(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    static boolean exists(CuratorFramework c, String path) throws Exception {
        return c.checkExists().forPath(path) != null;
    }

    // childrenIfAny lists path's children, none if path does not exist: a
    // container parent may be reaped at any moment (the servers check every
    // 500 ms here), also between a checkExists and a getChildren.
    static List<String> childrenIfAny(CuratorFramework c, String path) throws Exception {
        try {
            return c.getChildren().forPath(path);
        } catch (KeeperException.NoNodeException gone) {
            return List.of();
        }
    }

    static Stat stat(CuratorFramework c, String path) throws Exception {
        Stat s = c.checkExists().forPath(path);
        if (s == null) {
            throw new CheckFailed(path + " does not exist");
        }
        return s;
    }

    static long sessionId(CuratorFramework c) throws Exception {
        return c.getZookeeperClient().getZooKeeper().getSessionId();
    }
}
