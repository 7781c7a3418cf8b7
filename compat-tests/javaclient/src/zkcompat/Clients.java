package zkcompat;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.Watcher.Event.KeeperState;
import org.apache.zookeeper.ZooKeeper;

/** Opens clients and waits for their session states, always with a bound. */
final class Clients implements AutoCloseable {
    static final int SESSION_TIMEOUT_MS = 10_000;
    static final long CONNECT_WAIT_MS = 15_000;

    /** Records the session states a client reports. */
    static final class States implements Watcher {
        private final LinkedBlockingQueue<KeeperState> states = new LinkedBlockingQueue<>();

        @Override
        public void process(WatchedEvent event) {
            if (event.getType() == Event.EventType.None) {
                states.add(event.getState());
            }
        }

        /** Waits for state, skipping others; returns what was seen on failure. */
        void await(KeeperState want) throws InterruptedException {
            List<KeeperState> seen = new ArrayList<>();
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(CONNECT_WAIT_MS);
            while (true) {
                long left = deadline - System.nanoTime();
                KeeperState s = left > 0 ? states.poll(left, TimeUnit.NANOSECONDS) : null;
                if (s == null) {
                    throw new CheckFailed("no " + want + " within " + CONNECT_WAIT_MS + " ms (states seen: " + seen + ")");
                }
                if (s == want) {
                    return;
                }
                seen.add(s);
            }
        }
    }

    private final String addr;
    private final List<ZooKeeper> open = new ArrayList<>();

    Clients(String addr) {
        this.addr = addr;
    }

    String addr() {
        return addr;
    }

    /** A new connected client (its session is closed by close()). */
    ZooKeeper connect() throws Exception {
        return connect(new States());
    }

    /** A new connected client whose session states go to st. */
    ZooKeeper connect(States st) throws Exception {
        ZooKeeper zk = new ZooKeeper(addr, SESSION_TIMEOUT_MS, st);
        track(zk);
        st.await(KeeperState.SyncConnected);
        return zk;
    }

    /**
     * Closes zk's socket without closing its session, as a network failure
     * would; the client then reconnects to the same session and restores its
     * watches with setWatches. The 3.8 client has a hook for tests
     * (SendThread.testableCloseSocket) that only reflection reaches.
     */
    static void dropConnection(ZooKeeper zk) throws Exception {
        Field cnxnField = ZooKeeper.class.getDeclaredField("cnxn");
        cnxnField.setAccessible(true);
        Object cnxn = cnxnField.get(zk);
        Field sendField = cnxn.getClass().getDeclaredField("sendThread");
        sendField.setAccessible(true);
        Object send = sendField.get(cnxn);
        Method close = send.getClass().getDeclaredMethod("testableCloseSocket");
        close.setAccessible(true);
        close.invoke(send);
    }

    /** Reattaches to an existing session; the caller checks the outcome on st. */
    ZooKeeper reattach(long sessionId, byte[] passwd, States st) throws Exception {
        ZooKeeper zk = new ZooKeeper(addr, SESSION_TIMEOUT_MS, st, sessionId, passwd);
        track(zk);
        return zk;
    }

    private synchronized void track(ZooKeeper zk) {
        open.add(zk);
    }

    /**
     * Waits until every event and async reply that zk received before the
     * reply to a new request has been delivered to the watchers.
     */
    static void barrier(ZooKeeper zk) throws InterruptedException {
        CountDownLatch done = new CountDownLatch(1);
        zk.exists("/", false, (rc, path, ctx, stat) -> done.countDown(), null);
        if (!done.await(Events.WAIT_MS, TimeUnit.MILLISECONDS)) {
            throw new CheckFailed("no reply to exists(/) within " + Events.WAIT_MS + " ms");
        }
    }

    @Override
    public synchronized void close() {
        for (ZooKeeper zk : open) {
            try {
                zk.close(2_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
        open.clear();
    }
}
