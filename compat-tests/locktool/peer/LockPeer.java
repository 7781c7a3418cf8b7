import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.data.Stat;

/**
 * Curator 5 peer of zkraft lock / zkraft elect in the locktool tests.
 *
 * <pre>
 *   LockPeer mutex HOSTS PATH LOG ROUNDS NAME...   one thread and session per NAME; each takes the
 *                                                  InterProcessMutex at PATH ROUNDS times and, inside,
 *                                                  appends "begin NAME TOKEN" and "end NAME TOKEN" to LOG
 *                                                  (TOKEN: czxid of its lock node); prints "ready"
 *                                                  once connected and "done" at the end
 *   LockPeer latch HOSTS PATH                      reads commands on stdin, answers one line each:
 *       join ID     start a LeaderLatch with id ID            -> "joined ID"
 *       await ID    wait (15 s) until ID's latch leads          -> "leader ID" or "timeout ID"
 *       status ID   -> "status ID has=true|false leader=LEADERID"
 *       leave ID    close ID's latch                            -> "left ID"
 * </pre>
 *
 * Every wait is bounded; a failure prints "error ..." and exits 1.
 */
public final class LockPeer {
    static CuratorFramework client(String hosts) throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.builder()
                .connectString(hosts)
                .sessionTimeoutMs(10_000)
                .connectionTimeoutMs(5_000)
                .retryPolicy(new ExponentialBackoffRetry(100, 10, 1000))
                .build();
        c.start();
        if (!c.blockUntilConnected(15, TimeUnit.SECONDS)) {
            throw new IllegalStateException("no connection to " + hosts);
        }
        return c;
    }

    static synchronized void append(FileOutputStream out, String line) throws Exception {
        out.write((line + "\n").getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    /** The czxid of the first lock node of path, which must belong to c's session. */
    static long token(CuratorFramework c, String path) throws Exception {
        List<String> children = new ArrayList<>(c.getChildren().forPath(path));
        children.removeIf(n -> !n.matches(".*(lock-|__lock__)-?\\d{10}$"));
        children.sort(Comparator.comparing(n -> n.substring(n.length() - 10)));
        if (children.isEmpty()) {
            throw new IllegalStateException("no lock node while holding the mutex");
        }
        Stat st = c.checkExists().forPath(path + "/" + children.get(0));
        long session = c.getZookeeperClient().getZooKeeper().getSessionId();
        if (st == null || st.getEphemeralOwner() != session) {
            throw new IllegalStateException("first lock node " + children.get(0) + " is not ours");
        }
        return st.getCzxid();
    }

    static void mutex(String hosts, String path, String log, int rounds, List<String> names) throws Exception {
        List<Thread> threads = new ArrayList<>();
        List<String> errors = Collections.synchronizedList(new ArrayList<>());
        try (FileOutputStream out = new FileOutputStream(log, true)) {
            List<CuratorFramework> clients = new ArrayList<>();
            for (String name : names) {
                clients.add(client(hosts));
            }
            System.out.println("ready");
            System.out.flush();
            for (int k = 0; k < names.size(); k++) {
                String name = names.get(k);
                CuratorFramework client = clients.get(k);
                Thread t = new Thread(() -> {
                    try (CuratorFramework c = client) {
                        InterProcessMutex m = new InterProcessMutex(c, path);
                        for (int i = 0; i < rounds; i++) {
                            if (!m.acquire(30, TimeUnit.SECONDS)) {
                                throw new IllegalStateException("acquire took over 30 s");
                            }
                            try {
                                long tok = token(c, path);
                                append(out, "begin " + name + " " + tok);
                                Thread.sleep(15);
                                append(out, "end " + name + " " + tok);
                            } finally {
                                m.release();
                            }
                            Thread.sleep(20); // let the other contenders in
                        }
                    } catch (Exception e) {
                        errors.add(name + ": " + e);
                    }
                });
                t.start();
                threads.add(t);
            }
            for (Thread t : threads) {
                t.join(90_000);
            }
        }
        if (!errors.isEmpty()) {
            System.out.println("error " + errors);
            System.exit(1);
        }
        System.out.println("done");
    }

    static void latch(String hosts, String path) throws Exception {
        java.util.Map<String, LeaderLatch> latches = new java.util.HashMap<>();
        try (CuratorFramework c = client(hosts)) {
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            String line;
            while ((line = in.readLine()) != null) {
                String[] f = line.trim().split(" ");
                if (f.length != 2) {
                    continue;
                }
                String id = f[1];
                switch (f[0]) {
                    case "join": {
                        LeaderLatch l = new LeaderLatch(c, path, id);
                        l.start();
                        latches.put(id, l);
                        System.out.println("joined " + id);
                        break;
                    }
                    case "await":
                        System.out.println((latches.get(id).await(15, TimeUnit.SECONDS) ? "leader " : "timeout ") + id);
                        break;
                    case "status": {
                        LeaderLatch l = latches.get(id);
                        System.out.println("status " + id + " has=" + l.hasLeadership() + " leader=" + l.getLeader().getId());
                        break;
                    }
                    case "leave":
                        latches.remove(id).close();
                        System.out.println("left " + id);
                        break;
                    default:
                        System.out.println("error unknown command " + f[0]);
                }
                System.out.flush();
            }
            for (LeaderLatch l : latches.values()) {
                l.close();
            }
        }
    }

    public static void main(String[] args) throws Exception {
        try {
            if (args.length >= 6 && args[0].equals("mutex")) {
                List<String> names = new ArrayList<>();
                for (int i = 5; i < args.length; i++) {
                    names.add(args[i]);
                }
                mutex(args[1], args[2], args[3], Integer.parseInt(args[4]), names);
            } else if (args.length == 3 && args[0].equals("latch")) {
                latch(args[1], args[2]);
            } else {
                System.err.println("usage: LockPeer mutex HOSTS PATH LOG ROUNDS NAME... | LockPeer latch HOSTS PATH");
                System.exit(2);
            }
        } catch (Exception e) {
            System.out.println("error " + e);
            System.exit(1);
        }
        System.exit(0);
    }
}
