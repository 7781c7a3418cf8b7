package zkcompat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.Watcher.Event.EventType;

/**
 * A watcher that queues the node events it receives (session events, type
 * None, are ignored) so that a check can wait for them in order.
 */
final class Events implements Watcher {
    static final long WAIT_MS = 10_000;

    private final LinkedBlockingQueue<WatchedEvent> queue = new LinkedBlockingQueue<>();

    @Override
    public void process(WatchedEvent event) {
        if (event.getType() != EventType.None) {
            queue.add(event);
        }
    }

    /** Waits (bounded) for the next event and checks its type and path. */
    WatchedEvent expect(EventType type, String path) throws InterruptedException {
        WatchedEvent e = queue.poll(WAIT_MS, TimeUnit.MILLISECONDS);
        if (e == null) {
            throw new CheckFailed("no event within " + WAIT_MS + " ms, want " + type + " " + path);
        }
        if (e.getType() != type || !path.equals(e.getPath())) {
            throw new CheckFailed("want event " + type + " " + path + ", got " + e.getType() + " " + e.getPath());
        }
        return e;
    }

    /**
     * Asserts that no event is queued. Call it after Clients.barrier on the
     * watching client: the server sends a change's notification before the
     * reply to any later request of that connection, and the client delivers
     * events and async callbacks through one thread, in order.
     */
    void expectNone(String when) {
        List<WatchedEvent> left = new ArrayList<>();
        queue.drainTo(left);
        if (!left.isEmpty()) {
            StringBuilder b = new StringBuilder();
            for (WatchedEvent e : left) {
                b.append(' ').append(e.getType()).append(' ').append(e.getPath());
            }
            throw new CheckFailed("unexpected event(s) " + when + ":" + b);
        }
    }
}
