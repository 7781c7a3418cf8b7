import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.RetryOneTime;

/**
 * Holds Curator locks for compat-tests/locks: an InterProcessMutex held by
 * one client and waited for by another, and an InterProcessReadWriteLock
 * whose write lock is held while a reader waits. Prints "READY {role: session
 * id hex}" once every contender node exists, waits for a line on stdin,
 * releases everything and prints DONE. Every wait is bounded.
 */
public class CuratorLocks {
    static final int TIMEOUT_S = 30;

    static void waitChildren(CuratorFramework c, String path, int n) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(TIMEOUT_S);
        while (System.nanoTime() < deadline) {
            if (c.checkExists().forPath(path) != null && c.getChildren().forPath(path).size() >= n) {
                return;
            }
            Thread.sleep(20);
        }
        throw new IllegalStateException("timeout waiting for " + n + " children of " + path);
    }

    static Thread contend(InterProcessLock lock) {
        Thread t = new Thread(() -> {
            try {
                if (lock.acquire(TIMEOUT_S, TimeUnit.SECONDS)) {
                    lock.release();
                }
            } catch (Exception e) {
                e.printStackTrace();
            }
        });
        t.start();
        return t;
    }

    public static void main(String[] args) throws Exception {
        Map<String, CuratorFramework> clients = new LinkedHashMap<>();
        for (String name : new String[] {"holder", "waiter", "writer", "reader"}) {
            CuratorFramework c = CuratorFrameworkFactory.newClient(args[0], 10000, 10000, new RetryOneTime(100));
            c.start();
            if (!c.blockUntilConnected(TIMEOUT_S, TimeUnit.SECONDS)) {
                throw new IllegalStateException("no connection for " + name);
            }
            clients.put(name, c);
        }
        InterProcessMutex mutex = new InterProcessMutex(clients.get("holder"), "/cur/lock");
        if (!mutex.acquire(TIMEOUT_S, TimeUnit.SECONDS)) throw new IllegalStateException("mutex");
        InterProcessLock write = new InterProcessReadWriteLock(clients.get("writer"), "/cur/rw").writeLock();
        if (!write.acquire(TIMEOUT_S, TimeUnit.SECONDS)) throw new IllegalStateException("write lock");

        List<Thread> threads = new ArrayList<>();
        threads.add(contend(new InterProcessMutex(clients.get("waiter"), "/cur/lock")));
        threads.add(contend(new InterProcessReadWriteLock(clients.get("reader"), "/cur/rw").readLock()));
        waitChildren(clients.get("holder"), "/cur/lock", 2);
        waitChildren(clients.get("holder"), "/cur/rw", 2);

        StringBuilder ids = new StringBuilder("{");
        for (Map.Entry<String, CuratorFramework> e : clients.entrySet()) {
            if (ids.length() > 1) ids.append(",");
            long id = e.getValue().getZookeeperClient().getZooKeeper().getSessionId();
            ids.append("\"").append(e.getKey()).append("\":\"0x").append(Long.toHexString(id)).append("\"");
        }
        System.out.println("READY " + ids.append("}"));
        System.out.flush();
        new BufferedReader(new InputStreamReader(System.in)).readLine();

        mutex.release();
        write.release();
        for (Thread t : threads) t.join(TimeUnit.SECONDS.toMillis(TIMEOUT_S));
        for (CuratorFramework c : clients.values()) c.close();
        System.out.println("DONE");
        System.out.flush();
    }
}
