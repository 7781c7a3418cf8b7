#!/usr/bin/env python3
"""Eight kazoo clients contend on one kazoo Lock while the ensemble fails over.

    kazoo_lock.py HOST:PORT[,HOST:PORT...]

Each client is its own KazooClient session (one thread each) over the whole
connect string and takes the lock QUOTA times (env KAZOO_LOCK_QUOTA, default
40), holding it HOLD seconds. After every acquisition the program prints
"progress <total acquisitions>"; clients_test.go reads those lines, kills the
leader once they start and restarts it once they resume.

A client behaves as an application should: it enters its critical section
only if its connection stayed CONNECTED since the acquire (a SUSPENDED or
LOST state in between means the lock may be lost, so it releases and tries
again), and when a release fails it closes its session (its ephemeral lock
node goes with it) and opens a new one.

Checks: no two clients inside the critical section at once; the fencing
tokens (czxid of the holder's lock node, read with exists() right after the
acquire and owned by the holder's session) strictly increase; no acquire
waited past ACQUIRE_TIMEOUT (a lost watch event); every client completed
its quota; no lock node is left once every session is closed. Every wait is
bounded; the clients give up at CLIENT_DEADLINE.
"""

import logging
import os
import sys
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))

import suitekit  # noqa: E402
from kazoo.client import KazooClient, KazooState  # noqa: E402
from kazoo.exceptions import KazooException, LockTimeout  # noqa: E402
from kazoo.retry import KazooRetry  # noqa: E402

CLIENTS = 8
QUOTA = int(os.environ.get("KAZOO_LOCK_QUOTA", "40"))
HOLD = 0.015  # seconds inside the critical section
SESSION_TIMEOUT = 8.0  # seconds; the ensembles' maxSessionTimeout is 10 s
ACQUIRE_TIMEOUT = 25.0  # far above a leader change plus a session timeout
CLIENT_DEADLINE = 60.0  # seconds from the start for every client to finish
CLEANUP_WAIT = SESSION_TIMEOUT + 7.0  # a session closed while disconnected expires


def new_client(hosts):
    """A started KazooClient whose retries ride through a leader change."""
    zk = KazooClient(
        hosts=hosts,
        timeout=SESSION_TIMEOUT,
        connection_retry=KazooRetry(max_tries=-1, delay=0.05, backoff=1.5, max_delay=0.5),
        command_retry=KazooRetry(max_tries=-1, delay=0.05, backoff=1.5, max_delay=0.5, deadline=20.0),
    )
    zk.start(timeout=15)
    return zk


class CriticalSection:
    """Detects overlapping holders and fencing tokens that do not increase."""

    def __init__(self):
        self.mu = threading.Lock()
        self.holder = None
        self.last_token = 0
        self.entries = 0
        self.overlaps = []
        self.token_errors = []
        self.other_errors = []

    def enter(self, client, token):
        with self.mu:
            if self.holder is not None:
                self.overlaps.append(f"client {client} entered while client {self.holder} holds the lock")
            if token <= self.last_token:
                self.token_errors.append(
                    f"client {client} holds fencing token {token:#x}, not above the previous {self.last_token:#x}")
            self.holder, self.last_token = client, token
            self.entries += 1
            return self.entries

    def leave(self, client):
        with self.mu:
            if self.holder == client:
                self.holder = None

    def error(self, msg):
        with self.mu:
            self.other_errors.append(msg)


class Contender(threading.Thread):
    def __init__(self, idx, hosts, path, cs, out_mu, stop_at):
        super().__init__(name=f"client-{idx}", daemon=True)
        self.idx = idx
        self.hosts = hosts
        self.path = path
        self.cs = cs
        self.out_mu = out_mu
        self.stop_at = stop_at
        self.done = 0
        self.recoveries = 0
        self.abandoned = 0  # acquisitions given up because the connection wavered
        self.stalls = []
        self.epoch = 0  # bumped on every SUSPENDED or LOST state
        self.zk = None

    def _listener(self, state):
        if state in (KazooState.SUSPENDED, KazooState.LOST):
            self.epoch += 1

    def _connect(self):
        while time.monotonic() < self.stop_at:
            try:
                self.zk = new_client(self.hosts)
                self.zk.add_listener(self._listener)
                return True
            except Exception:  # no member reachable yet: try again until stop_at
                time.sleep(0.2)
        return False

    def _restart(self):
        """Closes the session (its ephemeral nodes go) and opens a new one."""
        self.recoveries += 1
        self.epoch += 1
        zk, self.zk = self.zk, None
        try:
            zk.stop()
            zk.close()
        except Exception:
            pass
        return self._connect()

    def _token(self, lock):
        """The czxid of the holder's lock node, checked to be owned by its session."""
        node = f"{self.path}/{lock.node}"
        st = self.zk.retry(self.zk.exists, node)
        session = self.zk.client_id[0] if self.zk.client_id else None
        if st is None or st.ephemeralOwner != session:
            return None, f"lock node {node} (exists {st is not None}) is not owned by the holder's session {session}"
        return st.czxid, None

    def run(self):
        if not self._connect():
            self.cs.error(f"client {self.idx}: could not connect before the deadline")
            return
        try:
            while self.done < QUOTA and time.monotonic() < self.stop_at:
                self._round()
        finally:
            try:
                self.zk.stop()
                self.zk.close()
            except Exception:
                pass

    def _round(self):
        lock = self.zk.Lock(self.path, f"client-{self.idx}")
        started = time.monotonic()
        timeout = min(ACQUIRE_TIMEOUT, max(self.stop_at - started, 1.0))
        try:
            got = lock.acquire(timeout=timeout)
        except LockTimeout:
            got = False
        except KazooException:
            # kazoo removed its lock node (best effort); its session may be gone.
            self._restart()
            return
        if not got:
            if timeout == ACQUIRE_TIMEOUT:
                self.stalls.append(f"client {self.idx}: acquire gave up after {time.monotonic() - started:.1f} s")
            self._restart()
            return
        epoch = self.epoch
        try:
            token, problem = self._token(lock)
        except KazooException:
            token, problem = None, None
        if token is None or epoch != self.epoch or self.zk.state != KazooState.CONNECTED:
            # The connection dropped since the acquire: the lock may be lost.
            # Only a node that is gone or foreign while the session never
            # wavered is a safety violation.
            if problem and epoch == self.epoch:
                self.cs.error(f"client {self.idx}: {problem}")
            self.abandoned += 1
            self._release(lock)
            return
        total = self.cs.enter(self.idx, token)
        time.sleep(HOLD)
        self.cs.leave(self.idx)
        self.done += 1
        with self.out_mu:
            print(f"progress {total}", flush=True)
        self._release(lock)

    def _release(self, lock):
        try:
            lock.release()
        except Exception:
            # The node may still be there: end the session so it goes.
            self._restart()


def main(argv):
    # kazoo logs every dropped connection; the checks report what matters.
    logging.getLogger("kazoo").setLevel(logging.ERROR)
    if len(argv) != 2:
        print("usage: kazoo_lock.py HOST:PORT[,HOST:PORT...]", file=sys.stderr)
        return 2
    hosts = argv[1]
    start = time.monotonic()
    report = suitekit.Report()
    path = "/kazoo-lock-" + format(int(time.time() * 1000), "x")

    setup = new_client(hosts)
    try:
        setup.ensure_path(path)
        cs = CriticalSection()
        out_mu = threading.Lock()
        clients = [Contender(i + 1, hosts, path, cs, out_mu, start + CLIENT_DEADLINE) for i in range(CLIENTS)]
        for c in clients:
            c.start()
        for c in clients:
            c.join(timeout=max(start + CLIENT_DEADLINE + 10 - time.monotonic(), 0.1))
        hung = [c.idx for c in clients if c.is_alive()]
        print(f"# {cs.entries} acquisitions, {sum(c.abandoned for c in clients)} abandoned after a connection loss, "
              f"{sum(c.recoveries for c in clients)} session restarts, {time.monotonic() - start:.1f} s", flush=True)

        def exclusion():
            if cs.overlaps or cs.other_errors:
                raise suitekit.CheckError("; ".join((cs.overlaps + cs.other_errors)[:5]))

        def fencing():
            if cs.token_errors:
                raise suitekit.CheckError("; ".join(cs.token_errors[:5]))
            if cs.entries == 0:
                raise suitekit.CheckError("no acquisition at all")

        def no_stall():
            stalls = [s for c in clients for s in c.stalls]
            if stalls:
                raise suitekit.CheckError("; ".join(stalls[:5]))

        def quota():
            short = [f"client {c.idx}: {c.done} of {QUOTA}" for c in clients if c.done < QUOTA]
            if hung:
                short.append(f"clients {hung} still running after the deadline")
            if short:
                raise suitekit.CheckError("quota not completed within "
                                          f"{CLIENT_DEADLINE:.0f} s: " + "; ".join(short))

        def no_leftover():
            deadline = time.monotonic() + CLEANUP_WAIT
            while True:
                left = setup.retry(setup.get_children, path)
                if not left:
                    return
                if time.monotonic() > deadline:
                    raise suitekit.CheckError(f"lock nodes left {CLEANUP_WAIT:.0f} s after every session closed: {left}")
                time.sleep(0.2)

        report.check(f"kazoo Lock: mutual exclusion across the failover ({CLIENTS} clients)", exclusion)
        report.check("kazoo Lock: fencing tokens (czxid) strictly increase", fencing)
        report.check(f"kazoo Lock: no acquire waited past {ACQUIRE_TIMEOUT:.0f} s", no_stall)
        report.check(f"kazoo Lock: every client completed its quota of {QUOTA}", quota)
        report.check("kazoo Lock: no lock node left once every session is closed", no_leftover)
    finally:
        setup.stop()
        setup.close()
    return report.summary()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
