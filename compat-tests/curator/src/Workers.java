import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/** Workers runs n bodies on their own daemon threads, starting them together, and joins them with a bound. */
final class Workers {
    interface Body {
        void run(int i) throws Exception;
    }

    private Workers() {
    }

    static void run(int n, long timeoutMs, String what, Body body) throws Exception {
        CountDownLatch go = new CountDownLatch(1);
        CountDownLatch done = new CountDownLatch(n);
        ConcurrentLinkedQueue<String> errors = new ConcurrentLinkedQueue<>();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            final int id = i;
            Thread t = new Thread(() -> {
                try {
                    go.await();
                    body.run(id);
                } catch (Throwable e) {
                    errors.add("worker " + id + ": " + CuratorSuite.describe(e));
                } finally {
                    done.countDown();
                }
            }, what + "-" + i);
            t.setDaemon(true);
            threads.add(t);
            t.start();
        }
        go.countDown();
        if (!done.await(timeoutMs, TimeUnit.MILLISECONDS)) {
            for (Thread t : threads) {
                t.interrupt();
            }
            throw new CheckFailed(what + ": " + done.getCount() + " of " + n + " workers not done after " + timeoutMs
                    + " ms" + (errors.isEmpty() ? "" : "; errors: " + errors));
        }
        if (!errors.isEmpty()) {
            throw new CheckFailed(what + ": " + errors.peek() + (errors.size() > 1 ? " (+" + (errors.size() - 1) + " more)" : ""));
        }
    }
}
