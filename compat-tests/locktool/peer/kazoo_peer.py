#!/usr/bin/env python3
"""kazoo peer of zkraft lock in the locktool tests.

    kazoo_peer.py HOSTS PATH LOG ROUNDS NAME...

One thread and KazooClient session per NAME; each takes kazoo's Lock at PATH
ROUNDS times and, inside, appends "begin NAME TOKEN" and "end NAME TOKEN" to
LOG (TOKEN: the czxid of its lock node, which must belong to its session).
Prints "ready" once connected, then "done", or "error ..." and exits 1. Every wait is bounded.
"""

import logging
import os
import sys
import threading

from kazoo.client import KazooClient

ACQUIRE_TIMEOUT = 30.0
HOLD = 0.015


def main(argv):
    logging.getLogger("kazoo").setLevel(logging.ERROR)
    if len(argv) < 6:
        print("usage: kazoo_peer.py HOSTS PATH LOG ROUNDS NAME...", file=sys.stderr)
        return 2
    hosts, path, log, rounds, names = argv[1], argv[2], argv[3], int(argv[4]), argv[5:]
    out_mu = threading.Lock()
    errors = []
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def append(line):
        with out_mu:
            os.write(fd, (line + "\n").encode())

    clients = {}
    for n in names:
        clients[n] = KazooClient(hosts=hosts, timeout=10.0)
        clients[n].start(timeout=15)
    print("ready", flush=True)

    def run(name):
        zk = clients[name]
        try:
            for _ in range(rounds):
                lock = zk.Lock(path, name)
                if not lock.acquire(timeout=ACQUIRE_TIMEOUT):
                    raise RuntimeError(f"acquire took over {ACQUIRE_TIMEOUT} s")
                try:
                    st = zk.exists(f"{path}/{lock.node}")
                    if st is None or st.ephemeralOwner != zk.client_id[0]:
                        raise RuntimeError(f"lock node {lock.node} is not ours")
                    append(f"begin {name} {st.czxid}")
                    threading.Event().wait(HOLD)
                    append(f"end {name} {st.czxid}")
                finally:
                    lock.release()
                threading.Event().wait(0.02)  # let the other contenders in
        except Exception as e:  # reported, and the run fails
            errors.append(f"{name}: {e!r}")
        finally:
            zk.stop()
            zk.close()

    threads = [threading.Thread(target=run, args=(n,), daemon=True) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    os.close(fd)
    if errors or any(t.is_alive() for t in threads):
        print("error", errors or "a client is still running after 90 s", flush=True)
        return 1
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
