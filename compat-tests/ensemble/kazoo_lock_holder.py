#!/usr/bin/env python3
"""One kazoo client that takes a lock and holds it, for the lock-delay test.

    kazoo_lock_holder.py HOSTS LOCK_PATH MEMBER_PATH SESSION_TIMEOUT_S

The client connects to HOSTS with the given session timeout, creates
MEMBER_PATH as an ephemeral (a node outside the lock-delay paths) and prints
"session <id hex>". It then prints "waiting" and acquires kazoo's Lock on
LOCK_PATH (sequential ephemeral nodes LOCK_PATH/<uuid>__lock__N, as
Curator's InterProcessMutex makes them), blocking until it is its turn, and
prints "acquired <node> <unix time in ms>". It holds the lock until SIGUSR1:
then it prints "closing", closes its session cleanly (closeSession) and
prints "closed", exiting 0. Every state change is printed as "state <STATE>".
The test may SIGSTOP it to let its session expire. Without SIGUSR1 it gives
up after DEADLINE seconds and exits 1.
"""

import signal
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.retry import KazooRetry

DEADLINE = 90.0  # seconds


def main():
    hosts, lock_path, member_path, timeout = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    close = threading.Event()
    signal.signal(signal.SIGUSR1, lambda *_: close.set())

    zk = KazooClient(
        hosts=hosts,
        timeout=timeout,
        connection_retry=KazooRetry(max_tries=-1, delay=0.05, backoff=1.5, max_delay=0.5),
    )
    zk.add_listener(lambda s: print(f"state {s}", flush=True))
    zk.start(timeout=15)
    zk.create(member_path, b"", ephemeral=True, makepath=True)
    session_id, _ = zk.client_id
    print(f"session {session_id:x}", flush=True)
    lock = zk.Lock(lock_path, member_path)
    print("waiting", flush=True)
    lock.acquire()
    print(f"acquired {lock.node} {int(time.time() * 1000)}", flush=True)
    give_up = time.monotonic() + DEADLINE
    while not close.wait(0.1):
        if time.monotonic() > give_up:
            print("no SIGUSR1 in time", flush=True)
            return 1
    print("closing", flush=True)
    zk.stop()
    zk.close()
    print("closed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
