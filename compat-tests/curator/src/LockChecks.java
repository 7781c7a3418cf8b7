import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMultiLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;

/** Lock recipes: mutexes, semaphores, read-write and multi locks. */
final class LockChecks {
    static final int CONTENDERS = 8;

    private LockChecks() {
    }

    static void register() {
        CuratorSuite.add("InterProcessMutex mutual exclusion (8 clients)", LockChecks::mutexExclusion);
        CuratorSuite.add("InterProcessMutex reentrancy", LockChecks::mutexReentrant);
        CuratorSuite.add("InterProcessMutex acquire timeout", LockChecks::mutexTimeout);
        CuratorSuite.add("InterProcessMutex fencing tokens increase (8 clients)", LockChecks::mutexFencing);
        CuratorSuite.add("InterProcessMutex released on session expiry", LockChecks::mutexSessionExpiry);
        CuratorSuite.add("InterProcessSemaphoreMutex", LockChecks::semaphoreMutex);
        CuratorSuite.add("InterProcessSemaphoreV2 leases bounded", LockChecks::semaphoreV2);
        CuratorSuite.add("InterProcessReadWriteLock", LockChecks::readWriteLock);
        CuratorSuite.add("InterProcessMultiLock", LockChecks::multiLock);
    }

    /** A mutex that exposes the path of the lock node the calling thread holds. */
    static final class FencedMutex extends InterProcessMutex {
        FencedMutex(CuratorFramework client, String path) {
            super(client, path);
        }

        String ownLockPath() {
            return getLockPath();
        }
    }

    /** contend makes n clients each take lock(i) rounds times, counting holders to detect overlap. */
    static void contend(Ctx ctx, int n, int rounds, String what, java.util.function.Function<CuratorFramework, InterProcessLock> make)
            throws Exception {
        List<CuratorFramework> clients = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            clients.add(ctx.client());
        }
        AtomicInteger holders = new AtomicInteger();
        AtomicInteger overlaps = new AtomicInteger();
        AtomicInteger acquisitions = new AtomicInteger();
        Workers.run(n, 20_000, what, i -> {
            InterProcessLock lock = make.apply(clients.get(i));
            for (int r = 0; r < rounds; r++) {
                if (!lock.acquire(15, TimeUnit.SECONDS)) {
                    throw new CheckFailed("acquire timed out (15 s) in round " + r);
                }
                try {
                    if (holders.incrementAndGet() != 1) {
                        overlaps.incrementAndGet();
                    }
                    acquisitions.incrementAndGet();
                    Thread.sleep(3);
                    holders.decrementAndGet();
                } finally {
                    lock.release();
                }
            }
        });
        Ctx.equal(0, overlaps.get(), what + ": overlapping holders");
        Ctx.equal(n * rounds, acquisitions.get(), what + ": acquisitions");
    }

    static void mutexExclusion(Ctx ctx) throws Exception {
        String p = ctx.path("mutex");
        contend(ctx, CONTENDERS, 4, "mutex", c -> new InterProcessMutex(c, p));
        CuratorFramework c = ctx.client();
        // The lock's parent is a container: it may already be gone, or be empty.
        List<String> rest = Ctx.childrenIfAny(c, p);
        Ctx.equal(List.of(), rest, "lock children after every release");
    }

    static void mutexReentrant(Ctx ctx) throws Exception {
        String p = ctx.path("reentrant");
        CuratorFramework a = ctx.client();
        CuratorFramework b = ctx.client();
        InterProcessMutex ma = new InterProcessMutex(a, p);
        InterProcessMutex mb = new InterProcessMutex(b, p);
        Ctx.check(ma.acquire(5, TimeUnit.SECONDS), "first acquire failed");
        Ctx.check(ma.acquire(5, TimeUnit.SECONDS), "reentrant acquire failed");
        Ctx.check(ma.isOwnedByCurrentThread(), "not owned after two acquires");
        Ctx.equal(1, ma.getParticipantNodes().size(), "lock nodes after reentrant acquire");
        ma.release();
        Ctx.check(ma.isOwnedByCurrentThread(), "not owned after releasing once of twice");
        Ctx.check(!mb.acquire(300, TimeUnit.MILLISECONDS), "another client acquired while held once more");
        ma.release();
        Ctx.check(!ma.isOwnedByCurrentThread(), "still owned after releasing twice");
        Ctx.check(mb.acquire(5, TimeUnit.SECONDS), "another client could not acquire after full release");
        mb.release();
        try {
            ma.release();
            throw new CheckFailed("release of an unheld mutex did not throw");
        } catch (IllegalMonitorStateException expected) {
            // not held
        }
    }

    static void mutexTimeout(Ctx ctx) throws Exception {
        String p = ctx.path("timeout");
        CuratorFramework a = ctx.client();
        CuratorFramework b = ctx.client();
        InterProcessMutex ma = new InterProcessMutex(a, p);
        InterProcessMutex mb = new InterProcessMutex(b, p);
        Ctx.check(ma.acquire(5, TimeUnit.SECONDS), "holder could not acquire");
        long t0 = System.nanoTime();
        boolean got = mb.acquire(500, TimeUnit.MILLISECONDS);
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        Ctx.check(!got, "acquire returned true while another client holds the mutex");
        Ctx.check(ms >= 400, "acquire(500 ms) gave up after only %d ms", ms);
        // The timed-out waiter must have removed its node.
        Ctx.equal(1, ma.getParticipantNodes().size(), "lock nodes after the timed-out attempt");
        // A waiter blocked with a timeout gets the lock once the holder releases.
        Background waiting = Background.start("timed-waiter", () -> mb.acquire(10, TimeUnit.SECONDS));
        Ctx.waitForZk(5_000, "the waiter's lock node", () -> ma.getParticipantNodes().size() == 2);
        ma.release();
        Ctx.check(waiting.finished(5_000), "waiter not woken within 5 s of the release");
        Ctx.equal(Boolean.TRUE, waiting.result(), "waiter's acquire result");
    }

    static void mutexFencing(Ctx ctx) throws Exception {
        String p = ctx.path("fencing");
        List<CuratorFramework> clients = new ArrayList<>();
        for (int i = 0; i < CONTENDERS; i++) {
            clients.add(ctx.client());
        }
        List<Long> tokens = new ArrayList<>();
        List<String> nodes = new ArrayList<>();
        Workers.run(CONTENDERS, 20_000, "fencing", i -> {
            CuratorFramework c = clients.get(i);
            FencedMutex m = new FencedMutex(c, p);
            long sid = Ctx.sessionId(c);
            for (int r = 0; r < 3; r++) {
                if (!m.acquire(15, TimeUnit.SECONDS)) {
                    throw new CheckFailed("acquire timed out in round " + r);
                }
                try {
                    String own = m.ownLockPath();
                    Collection<String> parts = m.getParticipantNodes();
                    String first = parts.iterator().next();
                    if (!first.equals(own)) {
                        throw new CheckFailed("holder's node " + own + " is not the smallest participant " + first);
                    }
                    Stat st = c.checkExists().forPath(own);
                    if (st == null) {
                        throw new CheckFailed("holder's node " + own + " does not exist");
                    }
                    if (st.getEphemeralOwner() != sid) {
                        throw new CheckFailed("holder's node ephemeralOwner 0x" + Long.toHexString(st.getEphemeralOwner())
                                + ", want session 0x" + Long.toHexString(sid));
                    }
                    synchronized (tokens) {
                        tokens.add(st.getCzxid());
                        nodes.add(own);
                    }
                } finally {
                    m.release();
                }
            }
        });
        Ctx.equal(CONTENDERS * 3, tokens.size(), "number of tokens");
        for (int i = 1; i < tokens.size(); i++) {
            if (tokens.get(i) <= tokens.get(i - 1)) {
                throw new CheckFailed("fencing token " + i + " (czxid 0x" + Long.toHexString(tokens.get(i)) + ", "
                        + nodes.get(i) + ") not above the previous (0x" + Long.toHexString(tokens.get(i - 1)) + ", "
                        + nodes.get(i - 1) + ")");
            }
            long seqPrev = Long.parseLong(nodes.get(i - 1).substring(nodes.get(i - 1).length() - 10));
            long seq = Long.parseLong(nodes.get(i).substring(nodes.get(i).length() - 10));
            Ctx.check(seq > seqPrev, "lock sequence %d after %d", seq, seqPrev);
        }
    }

    static void mutexSessionExpiry(Ctx ctx) throws Exception {
        String p = ctx.path("expiry");
        // The holder asks for 8 s: the waiter must get the lock well before that would run out.
        CuratorFramework holder = ctx.client(8_000);
        CuratorFramework waiter = ctx.client();
        BlockingQueue<ConnectionState> states = new LinkedBlockingQueue<>();
        holder.getConnectionStateListenable().addListener((cl, s) -> states.add(s));
        FencedMutex mh = new FencedMutex(holder, p);
        InterProcessMutex mw = new InterProcessMutex(waiter, p);
        Ctx.check(mh.acquire(5, TimeUnit.SECONDS), "holder could not acquire");
        String holderNode = mh.ownLockPath();

        AtomicLong acquiredAt = new AtomicLong();
        Background waiting = Background.start("expiry-waiter", () -> {
            boolean ok = mw.acquire(20, TimeUnit.SECONDS);
            acquiredAt.set(System.nanoTime());
            if (ok) {
                mw.release();
            }
            return ok;
        });
        Ctx.waitForZk(5_000, "the waiter's lock node", () -> waiter.getChildren().forPath(p).size() == 2);

        ZooKeeper zk = holder.getZookeeperClient().getZooKeeper();
        long sid = zk.getSessionId();
        byte[] pw = zk.getSessionPasswd();
        long t0 = System.nanoTime();
        // Expire the session for real: attach a second connection to it and close that one
        // (closeSession). Repeat a few times in case the first attempt raced the holder's reconnect.
        boolean gone = false;
        for (int attempt = 0; attempt < 3 && !gone; attempt++) {
            CountDownLatch connected = new CountDownLatch(1);
            ZooKeeper dup = new ZooKeeper(ctx.addr, 8_000, ev -> {
                if (ev.getState() == Watcher.Event.KeeperState.SyncConnected) {
                    connected.countDown();
                }
            }, sid, pw);
            try {
                Ctx.check(connected.await(5, TimeUnit.SECONDS), "second connection to session 0x%s not established",
                        Long.toHexString(sid));
            } finally {
                dup.close();
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
            while (System.nanoTime() < deadline) {
                if (waiter.checkExists().forPath(holderNode) == null) {
                    gone = true;
                    break;
                }
                Thread.sleep(20);
            }
        }
        Ctx.check(gone, "holder's lock node %s still exists after closing its session", holderNode);
        Ctx.check(waiting.finished(5_000), "waiter did not get the lock within 5 s of the session expiry");
        Ctx.equal(Boolean.TRUE, waiting.result(), "waiter's acquire result");
        long ms = TimeUnit.NANOSECONDS.toMillis(acquiredAt.get() - t0);
        Ctx.check(ms < 7_000, "waiter got the lock %d ms after the expiry started: the session was not expired early", ms);
        // The holder's client learns that its session is gone.
        Ctx.waitFor(10_000, "LOST on the holder's client (states " + states + ")", () -> states.contains(ConnectionState.LOST));
        Ctx.waitForZk(15_000, "the holder's client to get a new session", () -> {
            if (!holder.getZookeeperClient().isConnected()) {
                return false;
            }
            long now = holder.getZookeeperClient().getZooKeeper().getSessionId();
            return now != 0 && now != sid;
        });
    }

    static void semaphoreMutex(Ctx ctx) throws Exception {
        String p = ctx.path("semmutex");
        CuratorFramework a = ctx.client();
        CuratorFramework b = ctx.client();
        InterProcessSemaphoreMutex ma = new InterProcessSemaphoreMutex(a, p);
        InterProcessSemaphoreMutex mb = new InterProcessSemaphoreMutex(b, p);
        Ctx.check(ma.acquire(5, TimeUnit.SECONDS), "first acquire failed");
        Ctx.check(ma.isAcquiredInThisProcess(), "isAcquiredInThisProcess false after acquire");
        Ctx.check(!ma.acquire(300, TimeUnit.MILLISECONDS), "semaphore mutex is reentrant (it must not be)");
        Ctx.check(!mb.acquire(300, TimeUnit.MILLISECONDS), "second client acquired while held");
        ma.release();
        Ctx.check(mb.acquire(5, TimeUnit.SECONDS), "second client could not acquire after release");
        mb.release();
        contend(ctx, 4, 3, "semaphore mutex", c -> new InterProcessSemaphoreMutex(c, p));
    }

    static void semaphoreV2(Ctx ctx) throws Exception {
        String p = ctx.path("semv2");
        final int max = 3;
        List<CuratorFramework> clients = new ArrayList<>();
        for (int i = 0; i < CONTENDERS; i++) {
            clients.add(ctx.client());
        }
        AtomicInteger holders = new AtomicInteger();
        AtomicInteger peak = new AtomicInteger();
        AtomicInteger grants = new AtomicInteger();
        Workers.run(CONTENDERS, 20_000, "semaphore", i -> {
            InterProcessSemaphoreV2 s = new InterProcessSemaphoreV2(clients.get(i), p, max);
            for (int r = 0; r < 3; r++) {
                Lease l = s.acquire(15, TimeUnit.SECONDS);
                if (l == null) {
                    throw new CheckFailed("acquire timed out in round " + r);
                }
                try {
                    int now = holders.incrementAndGet();
                    peak.accumulateAndGet(now, Math::max);
                    grants.incrementAndGet();
                    Thread.sleep(15);
                    holders.decrementAndGet();
                } finally {
                    s.returnLease(l);
                }
            }
        });
        Ctx.check(peak.get() <= max, "%d leases held at once, max is %d", peak.get(), max);
        Ctx.equal(CONTENDERS * 3, grants.get(), "leases granted");

        InterProcessSemaphoreV2 sx = new InterProcessSemaphoreV2(clients.get(0), p, max);
        InterProcessSemaphoreV2 sy = new InterProcessSemaphoreV2(clients.get(1), p, max);
        Collection<Lease> got = sx.acquire(max, 5, TimeUnit.SECONDS);
        List<Lease> all = got == null ? null : new ArrayList<>(got);
        Ctx.check(all != null && all.size() == max, "could not take all %d leases: %s", max, all);
        Ctx.check(sy.acquire(300, TimeUnit.MILLISECONDS) == null, "a lease was granted beyond the maximum");
        Lease one = all.iterator().next();
        sx.returnLease(one);
        Lease ly = sy.acquire(5, TimeUnit.SECONDS);
        Ctx.check(ly != null, "no lease after one was returned");
        all.remove(one);
        sx.returnAll(all);
        sy.returnLease(ly);
    }

    static void readWriteLock(Ctx ctx) throws Exception {
        String p = ctx.path("rw");
        CuratorFramework c1 = ctx.client();
        CuratorFramework c2 = ctx.client();
        CuratorFramework c3 = ctx.client();
        InterProcessReadWriteLock l1 = new InterProcessReadWriteLock(c1, p);
        InterProcessReadWriteLock l2 = new InterProcessReadWriteLock(c2, p);
        InterProcessReadWriteLock l3 = new InterProcessReadWriteLock(c3, p);
        Ctx.check(l1.readLock().acquire(5, TimeUnit.SECONDS), "reader 1 could not acquire");
        Ctx.check(l2.readLock().acquire(5, TimeUnit.SECONDS), "reader 2 could not acquire while reader 1 holds (readers share)");
        Ctx.check(!l3.writeLock().acquire(300, TimeUnit.MILLISECONDS), "writer acquired while readers hold");
        l1.readLock().release();
        Ctx.check(!l3.writeLock().acquire(300, TimeUnit.MILLISECONDS), "writer acquired while reader 2 holds");
        l2.readLock().release();
        Ctx.check(l3.writeLock().acquire(5, TimeUnit.SECONDS), "writer could not acquire after readers released");
        Ctx.check(!l1.readLock().acquire(300, TimeUnit.MILLISECONDS), "reader acquired while the writer holds");
        Ctx.check(!l2.writeLock().acquire(300, TimeUnit.MILLISECONDS), "second writer acquired while the writer holds");
        // Downgrade: the write-lock holder may take the read lock.
        Ctx.check(l3.readLock().acquire(5, TimeUnit.SECONDS), "writer could not take the read lock (downgrade)");
        l3.writeLock().release();
        Ctx.check(l1.readLock().acquire(5, TimeUnit.SECONDS), "reader could not join after the writer downgraded");
        l3.readLock().release();
        l1.readLock().release();
        Ctx.check(l2.writeLock().acquire(5, TimeUnit.SECONDS), "writer could not acquire a free lock");
        l2.writeLock().release();
    }

    static void multiLock(Ctx ctx) throws Exception {
        String p1 = ctx.path("multi", "one");
        String p2 = ctx.path("multi", "two");
        CuratorFramework a = ctx.client();
        CuratorFramework b = ctx.client();
        CuratorFramework c = ctx.client();
        InterProcessMultiLock ma = new InterProcessMultiLock(a, List.of(p1, p2));
        Ctx.check(ma.acquire(5, TimeUnit.SECONDS), "multi lock could not acquire");
        InterProcessMutex b2 = new InterProcessMutex(b, p2);
        InterProcessMutex c1 = new InterProcessMutex(c, p1);
        Ctx.check(!b2.acquire(300, TimeUnit.MILLISECONDS), "component two acquired while the multi lock holds it");
        Ctx.check(!c1.acquire(300, TimeUnit.MILLISECONDS), "component one acquired while the multi lock holds it");
        ma.release();
        Ctx.check(b2.acquire(5, TimeUnit.SECONDS), "component two not free after the multi lock released");
        // With one component held elsewhere the multi lock fails as a whole and keeps nothing.
        Ctx.check(!ma.acquire(500, TimeUnit.MILLISECONDS), "multi lock acquired while a component is held elsewhere");
        Ctx.check(!ma.isAcquiredInThisProcess(), "multi lock reports held after a failed acquire");
        Ctx.check(c1.acquire(5, TimeUnit.SECONDS), "component one still held after the multi lock's failed acquire");
        c1.release();
        b2.release();
        Ctx.check(ma.acquire(5, TimeUnit.SECONDS), "multi lock could not acquire once both were free");
        ma.release();
    }
}
