import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.data.Stat;

/**
 * Eight Curator clients contend on one InterProcessMutex while the ensemble fails over.
 *
 * <pre>  CuratorLock HOST:PORT[,HOST:PORT...]</pre>
 *
 * <p>Each client is its own CuratorFramework (one thread each) over the whole connect string,
 * with an ExponentialBackoffRetry that rides through a leader change, and takes the mutex QUOTA
 * times (env CURATOR_LOCK_QUOTA, default 40), holding it HOLD_MS. After every acquisition it
 * prints "progress &lt;total acquisitions&gt;"; clients_test.go reads those lines, kills the
 * leader once they start and restarts it once they resume.
 *
 * <p>A ConnectionStateListener bumps the client's epoch on SUSPENDED and LOST: the client enters
 * its critical section only if the epoch did not move since the acquire (LOST means the lock is
 * lost, SUSPENDED that it may be), otherwise it releases and tries again. When an acquire or a
 * release fails the client closes its session (its ephemeral lock node goes) and opens a new one.
 *
 * <p>Checks, printed as PASS/FAIL lines and a closing "N passed, M failed": no two clients inside
 * the critical section at once; the fencing tokens (czxid of the holder's participant node, owned
 * by the holder's session) strictly increase; no acquire waited past ACQUIRE_TIMEOUT_S (a lost
 * watch event); every client completed its quota; no lock node is left once every session is
 * closed. Every wait is bounded; the clients give up at CLIENT_DEADLINE_MS.
 */
public final class CuratorLock {
    static final int CLIENTS = 8;
    static final int QUOTA = Integer.parseInt(System.getenv().getOrDefault("CURATOR_LOCK_QUOTA", "40"));
    static final long HOLD_MS = 15;
    static final int SESSION_TIMEOUT_MS = 8000; // the ensembles' maxSessionTimeout is 10 s
    static final long ACQUIRE_TIMEOUT_S = 25; // far above a leader change plus a session timeout
    static final long CLIENT_DEADLINE_MS = 60_000;
    static final long CLEANUP_WAIT_MS = SESSION_TIMEOUT_MS + 7_000;

    static int passed;
    static int failed;

    /** A mutex that exposes the path of the participant node the calling thread holds. */
    static final class FencedMutex extends InterProcessMutex {
        FencedMutex(CuratorFramework client, String path) {
            super(client, path);
        }

        String ownLockPath() {
            return getLockPath();
        }
    }

    /** Detects overlapping holders and fencing tokens that do not increase. */
    static final class CriticalSection {
        int holder; // 0 if none
        long lastToken;
        int entries;
        final List<String> overlaps = new ArrayList<>();
        final List<String> tokenErrors = new ArrayList<>();
        final List<String> otherErrors = new ArrayList<>();

        synchronized int enter(int client, long token) {
            if (holder != 0) {
                overlaps.add("client " + client + " entered while client " + holder + " holds the lock");
            }
            if (token <= lastToken) {
                tokenErrors.add(String.format("client %d holds fencing token %#x, not above the previous %#x",
                        client, token, lastToken));
            }
            holder = client;
            lastToken = token;
            return ++entries;
        }

        synchronized void leave(int client) {
            if (holder == client) {
                holder = 0;
            }
        }

        synchronized void error(String msg) {
            otherErrors.add(msg);
        }
    }

    static CuratorFramework newClient(String hosts) throws InterruptedException {
        CuratorFramework c = CuratorFrameworkFactory.builder()
                .connectString(hosts)
                .sessionTimeoutMs(SESSION_TIMEOUT_MS)
                .connectionTimeoutMs(5000)
                .retryPolicy(new ExponentialBackoffRetry(100, 20, 1000))
                .build();
        c.start();
        if (!c.blockUntilConnected(15, TimeUnit.SECONDS)) {
            c.close();
            return null;
        }
        return c;
    }

    static final class Contender extends Thread {
        final int idx;
        final String hosts;
        final String path;
        final CriticalSection cs;
        final long stopAt;
        final AtomicInteger epoch = new AtomicInteger();
        final List<String> stalls = java.util.Collections.synchronizedList(new ArrayList<>());
        volatile int done;
        int recoveries;
        int abandoned; // acquisitions given up because the connection wavered
        CuratorFramework client;

        Contender(int idx, String hosts, String path, CriticalSection cs, long stopAt) {
            super("client-" + idx);
            setDaemon(true);
            this.idx = idx;
            this.hosts = hosts;
            this.path = path;
            this.cs = cs;
            this.stopAt = stopAt;
        }

        boolean connect() throws InterruptedException {
            while (System.currentTimeMillis() < stopAt) {
                CuratorFramework c = newClient(hosts);
                if (c != null) {
                    c.getConnectionStateListenable().addListener((cf, state) -> {
                        if (state == ConnectionState.SUSPENDED || state == ConnectionState.LOST) {
                            epoch.incrementAndGet();
                        }
                    });
                    client = c;
                    return true;
                }
            }
            return false;
        }

        /** Closes the session (its ephemeral nodes go) and opens a new one. */
        boolean restart() throws InterruptedException {
            recoveries++;
            epoch.incrementAndGet();
            client.close();
            client = null;
            return connect();
        }

        @Override
        public void run() {
            try {
                if (!connect()) {
                    cs.error("client " + idx + ": could not connect before the deadline");
                    return;
                }
                while (done < QUOTA && System.currentTimeMillis() < stopAt) {
                    if (!round()) {
                        return;
                    }
                }
            } catch (InterruptedException e) {
                cs.error("client " + idx + ": interrupted");
            } finally {
                if (client != null) {
                    client.close();
                }
            }
        }

        /** One attempt; false when the client could not reconnect before the deadline. */
        boolean round() throws InterruptedException {
            FencedMutex mutex = new FencedMutex(client, path);
            long started = System.currentTimeMillis();
            long timeoutMs = Math.min(ACQUIRE_TIMEOUT_S * 1000, Math.max(stopAt - started, 1000));
            boolean got;
            try {
                got = mutex.acquire(timeoutMs, TimeUnit.MILLISECONDS);
            } catch (Exception e) {
                // Curator deleted its participant node (best effort); the session may be gone.
                return restart();
            }
            if (!got) {
                if (timeoutMs == ACQUIRE_TIMEOUT_S * 1000) {
                    stalls.add(String.format("client %d: acquire gave up after %.1f s", idx,
                            (System.currentTimeMillis() - started) / 1000.0));
                }
                return restart();
            }
            int seen = epoch.get();
            String node = mutex.ownLockPath();
            long token = 0;
            String problem = null;
            try {
                Stat st = client.checkExists().forPath(node);
                long session = client.getZookeeperClient().getZooKeeper().getSessionId();
                if (st == null || st.getEphemeralOwner() != session) {
                    problem = String.format("participant node %s (exists %b) is not owned by the holder's session %#x",
                            node, st != null, session);
                } else {
                    token = st.getCzxid();
                }
            } catch (Exception e) {
                token = 0;
            }
            boolean connected = client.getZookeeperClient().isConnected();
            if (token == 0 || seen != epoch.get() || !connected) {
                // The connection dropped since the acquire: the lock may be lost. Only a node
                // that is gone or foreign while the connection never wavered is a violation.
                if (problem != null && seen == epoch.get()) {
                    cs.error("client " + idx + ": " + problem);
                }
                abandoned++;
                return release(mutex);
            }
            int total = cs.enter(idx, token);
            Thread.sleep(HOLD_MS);
            cs.leave(idx);
            done++;
            synchronized (CuratorLock.class) {
                System.out.println("progress " + total);
                System.out.flush();
            }
            return release(mutex);
        }

        boolean release(FencedMutex mutex) throws InterruptedException {
            try {
                mutex.release();
                return true;
            } catch (Exception e) {
                // The node may still be there: end the session so it goes.
                return restart();
            }
        }
    }

    interface Check {
        void run() throws Exception;
    }

    static void check(String name, Check c) {
        try {
            c.run();
            passed++;
            System.out.println("PASS " + name);
        } catch (Throwable e) {
            failed++;
            String msg = e instanceof AssertionError ? e.getMessage() : e.getClass().getSimpleName() + ": " + e.getMessage();
            System.out.println("FAIL " + name + ": " + String.valueOf(msg).replace('\n', ' '));
        }
        System.out.flush();
    }

    static void require(boolean ok, String msg) {
        if (!ok) {
            throw new AssertionError(msg);
        }
    }

    static String first(List<String> l) {
        return String.join("; ", l.subList(0, Math.min(5, l.size())));
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: CuratorLock HOST:PORT[,HOST:PORT...]");
            System.exit(2);
        }
        String hosts = args[0];
        long start = System.currentTimeMillis();
        String path = "/curator-lock-" + Long.toHexString(start);
        CuratorFramework setup = newClient(hosts);
        if (setup == null) {
            System.out.println("FAIL setup: no connection within 15 s");
            System.out.println("0 passed, 1 failed");
            System.exit(1);
        }
        CriticalSection cs = new CriticalSection();
        List<Contender> clients = new ArrayList<>();
        for (int i = 1; i <= CLIENTS; i++) {
            clients.add(new Contender(i, hosts, path, cs, start + CLIENT_DEADLINE_MS));
        }
        for (Contender c : clients) {
            c.start();
        }
        for (Contender c : clients) {
            c.join(Math.max(start + CLIENT_DEADLINE_MS + 10_000 - System.currentTimeMillis(), 100));
        }
        List<Integer> hung = new ArrayList<>();
        int recoveries = 0;
        int abandoned = 0;
        for (Contender c : clients) {
            if (c.isAlive()) {
                hung.add(c.idx);
            }
            recoveries += c.recoveries;
            abandoned += c.abandoned;
        }
        System.out.printf("# %d acquisitions, %d abandoned after a connection loss, %d session restarts, %.1f s%n",
                cs.entries, abandoned, recoveries, (System.currentTimeMillis() - start) / 1000.0);

        synchronized (cs) {
            check("InterProcessMutex: mutual exclusion across the failover (" + CLIENTS + " clients)", () -> {
                List<String> all = new ArrayList<>(cs.overlaps);
                all.addAll(cs.otherErrors);
                require(all.isEmpty(), first(all));
            });
            check("InterProcessMutex: fencing tokens (czxid) strictly increase", () -> {
                require(cs.tokenErrors.isEmpty(), first(cs.tokenErrors));
                require(cs.entries > 0, "no acquisition at all");
            });
        }
        check("InterProcessMutex: no acquire waited past " + ACQUIRE_TIMEOUT_S + " s", () -> {
            List<String> all = new ArrayList<>();
            for (Contender c : clients) {
                synchronized (c.stalls) {
                    all.addAll(c.stalls);
                }
            }
            require(all.isEmpty(), first(all));
        });
        check("InterProcessMutex: every client completed its quota of " + QUOTA, () -> {
            List<String> shortOnes = new ArrayList<>();
            for (Contender c : clients) {
                if (c.done < QUOTA) {
                    shortOnes.add("client " + c.idx + ": " + c.done + " of " + QUOTA);
                }
            }
            if (!hung.isEmpty()) {
                shortOnes.add("clients " + hung + " still running after the deadline");
            }
            require(shortOnes.isEmpty(), "quota not completed within " + CLIENT_DEADLINE_MS / 1000 + " s: " + first(shortOnes));
        });
        check("InterProcessMutex: no lock node left once every session is closed", () -> {
            long deadline = System.currentTimeMillis() + CLEANUP_WAIT_MS;
            while (true) {
                List<String> left = setup.checkExists().forPath(path) == null ? List.of() : setup.getChildren().forPath(path);
                if (left.isEmpty()) {
                    return;
                }
                require(System.currentTimeMillis() < deadline,
                        "lock nodes left " + CLEANUP_WAIT_MS / 1000 + " s after every session closed: " + left);
                Thread.sleep(200);
            }
        });
        setup.close();
        System.out.println(passed + " passed, " + failed + " failed");
        System.out.flush();
        // Daemon threads of a hung client must not keep the JVM alive.
        System.exit(failed == 0 ? 0 : 1);
    }
}
