import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/** Background runs one blocking call on its own daemon thread; its result, or what it threw, is kept. */
final class Background {
    private final CountDownLatch done = new CountDownLatch(1);
    private final AtomicReference<Object> result = new AtomicReference<>();

    private Background() {
    }

    static Background start(String name, Callable<?> call) {
        Background b = new Background();
        Thread t = new Thread(() -> {
            try {
                b.result.set(call.call());
            } catch (Throwable e) {
                b.result.set(e);
            } finally {
                b.done.countDown();
            }
        }, name);
        t.setDaemon(true);
        t.start();
        return b;
    }

    /** finished reports whether the call returned (or threw) within timeoutMs. */
    boolean finished(long timeoutMs) throws InterruptedException {
        return done.await(timeoutMs, TimeUnit.MILLISECONDS);
    }

    /** result is the call's return value or the Throwable it threw; null while it runs. */
    Object result() {
        return result.get();
    }
}
