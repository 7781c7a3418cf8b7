import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.leader.Participant;

/** Leader election: LeaderLatch and LeaderSelector, with failover. */
final class LeaderChecks {
    static final int MEMBERS = 3;

    private LeaderChecks() {
    }

    static void register() {
        CuratorSuite.add("LeaderLatch election and failover", LeaderChecks::latch);
        CuratorSuite.add("LeaderSelector election and failover", LeaderChecks::selector);
    }

    /** leaders returns the indexes of the open latches that claim leadership. */
    private static List<Integer> leaders(List<LeaderLatch> latches, boolean[] closed) {
        List<Integer> out = new ArrayList<>();
        for (int i = 0; i < latches.size(); i++) {
            if (!closed[i] && latches.get(i).hasLeadership()) {
                out.add(i);
            }
        }
        return out;
    }

    private static void agreeOnLeader(List<LeaderLatch> latches, boolean[] closed, int leader) throws Exception {
        String want = "member-" + leader;
        Ctx.waitForZk(5_000, "every member to name " + want + " as leader", () -> {
            for (int i = 0; i < latches.size(); i++) {
                if (closed[i]) {
                    continue;
                }
                Participant p = latches.get(i).getLeader();
                if (!p.isLeader() || !want.equals(p.getId())) {
                    return false;
                }
            }
            return true;
        });
        int count = 0;
        for (int i = 0; i < latches.size(); i++) {
            if (!closed[i]) {
                count++;
            }
        }
        Ctx.equal(count, latches.get(leader).getParticipants().size(), "participants");
    }

    static void latch(Ctx ctx) throws Exception {
        String p = ctx.path("latch");
        List<CuratorFramework> clients = new ArrayList<>();
        List<LeaderLatch> latches = new ArrayList<>();
        boolean[] closed = new boolean[MEMBERS];
        for (int i = 0; i < MEMBERS; i++) {
            CuratorFramework c = ctx.client();
            clients.add(c);
            LeaderLatch l = ctx.onClose(new LeaderLatch(c, p, "member-" + i));
            latches.add(l);
            l.start();
        }
        Ctx.waitFor(10_000, "a leader among the latches", () -> leaders(latches, closed).size() == 1);
        int first = leaders(latches, closed).get(0);
        agreeOnLeader(latches, closed, first);
        Ctx.equal(List.of(first), leaders(latches, closed), "latches claiming leadership");

        // Fail over: the leader's client goes away (its session is closed).
        clients.get(first).close();
        closed[first] = true;
        Ctx.waitFor(10_000, "a new leader after closing member-" + first, () -> leaders(latches, closed).size() == 1);
        int second = leaders(latches, closed).get(0);
        Ctx.check(second != first, "the closed member is still the leader");
        agreeOnLeader(latches, closed, second);

        // And once more by closing the latch itself.
        latches.get(second).close();
        closed[second] = true;
        Ctx.check(!latches.get(second).hasLeadership(), "a closed latch still has leadership");
        Ctx.waitFor(10_000, "the last member to lead", () -> leaders(latches, closed).size() == 1);
        int third = leaders(latches, closed).get(0);
        agreeOnLeader(latches, closed, third);
    }

    static void selector(Ctx ctx) throws Exception {
        String p = ctx.path("selector");
        // Members leading right now, and members whose client was closed under them (a closed
        // client's takeLeadership may linger until the selector is closed too: not an overlap).
        java.util.Set<Integer> leading = java.util.concurrent.ConcurrentHashMap.newKeySet();
        java.util.Set<Integer> clientClosed = java.util.concurrent.ConcurrentHashMap.newKeySet();
        AtomicInteger overlaps = new AtomicInteger();
        BlockingQueue<Integer> elected = new LinkedBlockingQueue<>();
        List<CuratorFramework> clients = new ArrayList<>();
        List<LeaderSelector> selectors = new ArrayList<>();
        for (int i = 0; i < MEMBERS; i++) {
            final int id = i;
            CuratorFramework c = ctx.client();
            clients.add(c);
            LeaderSelector s = new LeaderSelector(c, p, new LeaderSelectorListenerAdapter() {
                @Override
                public void takeLeadership(CuratorFramework client) throws Exception {
                    for (int other : leading) {
                        if (!clientClosed.contains(other)) {
                            overlaps.incrementAndGet();
                        }
                    }
                    leading.add(id);
                    elected.add(id);
                    try {
                        Thread.sleep(60_000); // lead until interrupted by close or connection loss
                    } finally {
                        leading.remove(id);
                    }
                }
            });
            s.setId("member-" + i);
            s.autoRequeue();
            selectors.add(ctx.onClose(s));
            s.start();
        }
        int first = Ctx.poll(elected, 10_000, "a first leader");
        Ctx.waitForZk(5_000, "every selector to name member-" + first, () -> {
            for (LeaderSelector s : selectors) {
                Participant l = s.getLeader();
                if (!l.isLeader() || !l.getId().equals("member-" + first)) {
                    return false;
                }
            }
            return true;
        });
        Ctx.check(selectors.get(first).hasLeadership(), "elected selector reports no leadership");
        Ctx.equal(MEMBERS, selectors.get(first).getParticipants().size(), "participants");

        // Fail over by closing the leader (interrupts takeLeadership and releases its lock node).
        selectors.get(first).close();
        int second = Ctx.poll(elected, 10_000, "a leader after closing member-" + first);
        Ctx.check(second != first, "closed member-%d was elected again", first);
        Ctx.check(selectors.get(second).hasLeadership(), "new leader reports no leadership");

        // Fail over by closing the leader's client (session closed).
        clientClosed.add(second);
        clients.get(second).close();
        int third = Ctx.poll(elected, 10_000, "a leader after closing the client of member-" + second);
        Ctx.check(third != first && third != second, "member-%d elected after being closed", third);
        Ctx.equal(0, overlaps.get(), "times two selectors led at once");
    }
}
