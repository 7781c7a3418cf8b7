#!/usr/bin/env python3
"""A kazoo client on an observer: forwarded writes, reads and a watch.

    kazoo_observer.py HOST:PORT PREFIX

The client connects to the one member HOST:PORT (the observer), creates
PREFIX/kazoo (a write the observer forwards to the leader), reads it back,
sets a data watch on PREFIX/watched (which must exist) and prints
"watching". The test then changes PREFIX/watched through a voter; the
program prints "fired <type> <path>" once the watch fires, reads the new
data ("data <value>") and exits 0. It exits 1 if the watch has not fired
after DEADLINE seconds. The last line is the suite summary "N passed, M
failed" (internal/zktest's rules), with a FAIL line before a failure.
"""

import sys
import threading

from kazoo.client import KazooClient

DEADLINE = 30.0  # seconds


def main():
    hosts, prefix = sys.argv[1], sys.argv[2]
    zk = KazooClient(hosts=hosts, timeout=10.0)
    zk.start(timeout=15)
    try:
        zk.create(prefix + "/kazoo", b"from-kazoo")
        data, _ = zk.get(prefix + "/kazoo")
        if data != b"from-kazoo":
            print(f"FAIL read back {data!r}, want b'from-kazoo'", flush=True)
            return 1
        print("wrote and read " + prefix + "/kazoo", flush=True)
        fired = threading.Event()
        seen = {}

        def watcher(event):
            seen["event"] = event
            fired.set()

        zk.get(prefix + "/watched", watch=watcher)
        print("watching", flush=True)
        if not fired.wait(DEADLINE):
            print("FAIL watch did not fire", flush=True)
            return 1
        ev = seen["event"]
        print(f"fired {ev.type} {ev.path}", flush=True)
        zk.sync(prefix + "/watched")
        data, _ = zk.get(prefix + "/watched")
        print("data " + data.decode(), flush=True)
        return 0
    finally:
        zk.stop()
        zk.close()


if __name__ == "__main__":
    code = main()
    if code == 0:
        print("PASS observer: forwarded write, read and watch", flush=True)
    print("1 passed, 0 failed" if code == 0 else "0 passed, 1 failed", flush=True)
    sys.exit(code)
