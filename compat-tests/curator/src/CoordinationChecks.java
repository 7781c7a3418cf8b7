import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.atomic.PromotedToLock;
import org.apache.curator.framework.recipes.barriers.DistributedBarrier;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.shared.SharedCountListener;
import org.apache.curator.framework.recipes.shared.SharedCountReader;
import org.apache.curator.framework.recipes.shared.VersionedValue;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;

/** Barriers, shared counters and distributed atomics. */
final class CoordinationChecks {
    private CoordinationChecks() {
    }

    static void register() {
        CuratorSuite.add("DistributedBarrier", CoordinationChecks::barrier);
        CuratorSuite.add("DistributedDoubleBarrier (3 members)", CoordinationChecks::doubleBarrier);
        CuratorSuite.add("SharedCount", CoordinationChecks::sharedCount);
        CuratorSuite.add("DistributedAtomicLong concurrent increments exact (8 clients)", CoordinationChecks::atomicLong);
    }

    static void barrier(Ctx ctx) throws Exception {
        String p = ctx.path("barrier");
        CuratorFramework owner = ctx.client();
        CuratorFramework waiterClient = ctx.client();
        DistributedBarrier set = new DistributedBarrier(owner, p);
        DistributedBarrier waiter = new DistributedBarrier(waiterClient, p);
        set.setBarrier();
        Ctx.check(!waiter.waitOnBarrier(300, TimeUnit.MILLISECONDS), "waitOnBarrier passed while the barrier is set");
        Background blocked = Background.start("barrier-waiter", () -> waiter.waitOnBarrier(10, TimeUnit.SECONDS));
        Ctx.check(!blocked.finished(200), "blocked waiter returned while the barrier is set: %s", blocked.result());
        set.removeBarrier();
        Ctx.check(blocked.finished(5_000), "waiter not released within 5 s of removeBarrier");
        Ctx.equal(Boolean.TRUE, blocked.result(), "waitOnBarrier result");
        Ctx.check(waiter.waitOnBarrier(1, TimeUnit.SECONDS), "waitOnBarrier on a removed barrier did not pass");
    }

    static void doubleBarrier(Ctx ctx) throws Exception {
        String p = ctx.path("dbarrier");
        final int n = 3;
        List<CuratorFramework> clients = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            clients.add(ctx.client());
        }
        CuratorFramework observer = ctx.client();
        AtomicInteger entered = new AtomicInteger();
        AtomicInteger left = new AtomicInteger();
        CountDownLatch allEntered = new CountDownLatch(n);
        CountDownLatch thirdGo = new CountDownLatch(1);
        List<String> errors = java.util.Collections.synchronizedList(new ArrayList<>());
        CountDownLatch done = new CountDownLatch(n);
        for (int i = 0; i < n; i++) {
            final int id = i;
            Thread t = new Thread(() -> {
                try {
                    if (id == n - 1) {
                        thirdGo.await();
                    }
                    DistributedDoubleBarrier b = new DistributedDoubleBarrier(clients.get(id), p, n);
                    if (!b.enter(15, TimeUnit.SECONDS)) {
                        errors.add("member " + id + ": enter timed out");
                        return;
                    }
                    entered.incrementAndGet();
                    allEntered.countDown();
                    allEntered.await(10, TimeUnit.SECONDS);
                    if (!b.leave(15, TimeUnit.SECONDS)) {
                        errors.add("member " + id + ": leave timed out");
                        return;
                    }
                    left.incrementAndGet();
                } catch (Throwable e) {
                    errors.add("member " + id + ": " + CuratorSuite.describe(e));
                } finally {
                    done.countDown();
                }
            });
            t.setDaemon(true);
            t.start();
        }
        // Two members are waiting in enter(): their nodes exist and neither got through.
        Ctx.waitForZk(5_000, "two members' nodes under the barrier", () -> observer.checkExists().forPath(p) != null
                && observer.getChildren().forPath(p).size() >= 2);
        Ctx.check(!allEntered.await(300, TimeUnit.MILLISECONDS) && entered.get() == 0,
                "%d members passed enter() before the third arrived", entered.get());
        thirdGo.countDown();
        Ctx.check(done.await(15, TimeUnit.SECONDS), "members did not finish enter/leave within 15 s (entered %d, left %d, errors %s)",
                entered.get(), left.get(), errors);
        Ctx.check(errors.isEmpty(), "%s", errors);
        Ctx.equal(n, entered.get(), "members through enter()");
        Ctx.equal(n, left.get(), "members through leave()");
        List<String> rest = Ctx.childrenIfAny(observer, p);
        Ctx.check(rest.stream().noneMatch(s -> !s.equals("ready")), "member nodes left after leave(): %s", rest);
    }

    static void sharedCount(Ctx ctx) throws Exception {
        String p = ctx.path("count");
        CuratorFramework c1 = ctx.client();
        CuratorFramework c2 = ctx.client();
        SharedCount s1 = ctx.onClose(new SharedCount(c1, p, 0));
        SharedCount s2 = ctx.onClose(new SharedCount(c2, p, 0));
        BlockingQueue<Integer> seen = new LinkedBlockingQueue<>();
        s2.addListener(new SharedCountListener() {
            @Override
            public void countHasChanged(SharedCountReader reader, int newCount) {
                seen.add(newCount);
            }

            @Override
            public void stateChanged(CuratorFramework client, ConnectionState newState) {
            }
        });
        s1.start();
        s2.start();
        Ctx.equal(0, s1.getCount(), "initial count");
        s1.setCount(5);
        Ctx.equal(5, Ctx.poll(seen, 5_000, "the other client's listener to see 5"), "value seen by the listener");
        Ctx.waitFor(5_000, "the other client's count to become 5", () -> s2.getCount() == 5);
        VersionedValue<Integer> stale = s1.getVersionedValue();
        Ctx.check(s2.trySetCount(s2.getVersionedValue(), 7), "trySetCount with the current version failed");
        Ctx.check(!s1.trySetCount(stale, 9), "trySetCount with a stale version succeeded");
        Ctx.waitFor(5_000, "the first client's count to become 7", () -> s1.getCount() == 7);
        Ctx.equal(7, Integer.valueOf(s2.getCount()), "count after the failed stale update");
        Ctx.check(s1.trySetCount(s1.getVersionedValue(), 9), "trySetCount with the refreshed version failed");
        Ctx.waitFor(5_000, "the other client's count to become 9", () -> s2.getCount() == 9);
    }

    static void atomicLong(Ctx ctx) throws Exception {
        String p = ctx.path("atomic");
        String lockPath = ctx.path("atomic-lock");
        final int n = 8;
        final int each = 25;
        List<CuratorFramework> clients = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            clients.add(ctx.client());
        }
        Set<Long> results = java.util.concurrent.ConcurrentHashMap.newKeySet();
        AtomicInteger duplicates = new AtomicInteger();
        Workers.run(n, 20_000, "atomic increments", i -> {
            DistributedAtomicLong v = new DistributedAtomicLong(clients.get(i), p, new RetryNTimes(20, 5),
                    PromotedToLock.builder().lockPath(lockPath).retryPolicy(new RetryNTimes(20, 10))
                            .timeout(10, TimeUnit.SECONDS).build());
            for (int k = 0; k < each; k++) {
                AtomicValue<Long> r = null;
                for (int attempt = 0; attempt < 20; attempt++) {
                    r = v.increment();
                    if (r.succeeded()) {
                        break;
                    }
                }
                if (r == null || !r.succeeded()) {
                    throw new CheckFailed("increment " + k + " never succeeded");
                }
                if (r.postValue() != r.preValue() + 1) {
                    throw new CheckFailed("increment went from " + r.preValue() + " to " + r.postValue());
                }
                if (!results.add(r.postValue())) {
                    duplicates.incrementAndGet();
                }
            }
        });
        Ctx.equal(0, duplicates.get(), "increments that returned an already-returned value");
        AtomicValue<Long> fin = new DistributedAtomicLong(ctx.client(), p, new RetryNTimes(3, 10)).get();
        Ctx.check(fin.succeeded(), "final get failed");
        Ctx.equal((long) n * each, fin.postValue(), "final value");
        Set<Long> want = new HashSet<>();
        for (long x = 1; x <= (long) n * each; x++) {
            want.add(x);
        }
        Ctx.check(want.equals(results), "increments did not return exactly 1..%d", n * each);
        // compareAndSet with a wrong expectation fails, with the right one succeeds.
        DistributedAtomicLong v = new DistributedAtomicLong(clients.get(0), p, new RetryNTimes(3, 10));
        Ctx.check(!v.compareAndSet(0L, 1L).succeeded(), "compareAndSet(0, 1) succeeded on %d", n * each);
        Ctx.check(v.compareAndSet((long) n * each, 1000L).succeeded(), "compareAndSet(%d, 1000) failed", n * each);
        Ctx.equal(1000L, v.get().postValue(), "value after compareAndSet");
    }
}
