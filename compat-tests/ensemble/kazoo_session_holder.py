#!/usr/bin/env python3
"""One kazoo session that holds an ephemeral and waits to learn it was lost.

    kazoo_session_holder.py HOST:PORT PATH

The client connects to the one member HOST:PORT, creates PATH as an
ephemeral and prints "session <id hex> <password hex>", so that the test can
attach another client to the same session (on another member) and close it.
Every state change is printed as "state <STATE>". When kazoo reports LOST
(the session expired) the program prints "lost" and exits 0; if that has not
happened after DEADLINE seconds it prints "still <STATE>" and exits 1.
"""

import sys
import threading
import time

from kazoo.client import KazooClient, KazooState
from kazoo.retry import KazooRetry

SESSION_TIMEOUT = 6.0  # seconds; within the ensembles' 1 s to 10 s
DEADLINE = 60.0  # seconds from the session's creation


def main():
    hosts, path = sys.argv[1], sys.argv[2]
    lost = threading.Event()
    state = {"now": None}

    def listener(s):
        state["now"] = s
        print(f"state {s}", flush=True)
        if s == KazooState.LOST:
            lost.set()

    zk = KazooClient(
        hosts=hosts,
        timeout=SESSION_TIMEOUT,
        connection_retry=KazooRetry(max_tries=-1, delay=0.05, backoff=1.5, max_delay=0.5),
    )
    zk.add_listener(listener)
    zk.start(timeout=15)
    zk.create(path, b"held", ephemeral=True)
    session_id, password = zk.client_id
    print(f"session {session_id:x} {password.hex()}", flush=True)
    if lost.wait(DEADLINE):
        print("lost", flush=True)
        zk.stop()
        zk.close()
        return 0
    print(f"still {state['now']}", flush=True)
    zk.stop()
    zk.close()
    return 1


if __name__ == "__main__":
    sys.exit(main())
