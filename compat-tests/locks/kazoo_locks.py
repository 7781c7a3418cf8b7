"""Holds kazoo locks for compat-tests/locks: a Lock held by one client and
waited for by another, and a ReadLock held by two readers with a WriteLock
waiting. Prints "READY {json of role -> session id hex}" once every
contender node exists, waits for a line on stdin, releases everything and
prints DONE. Every wait is bounded."""
import json
import sys
import threading
import time

from kazoo.client import KazooClient

TIMEOUT = 30


def wait_children(client, path, n):
    deadline = time.time() + TIMEOUT
    while time.time() < deadline:
        if client.exists(path) and len(client.get_children(path)) >= n:
            return
        time.sleep(0.02)
    raise SystemExit("timeout waiting for %d children of %s" % (n, path))


def main():
    hosts = sys.argv[1]
    clients = {}
    for name in ("holder", "waiter", "reader1", "reader2", "writer"):
        c = KazooClient(hosts=hosts, timeout=10)
        c.start(timeout=TIMEOUT)
        clients[name] = c

    lock = clients["holder"].Lock("/kz/lock", "holder")
    assert lock.acquire(timeout=TIMEOUT)
    waiter = clients["waiter"].Lock("/kz/lock", "waiter")

    r1 = clients["reader1"].ReadLock("/kz/rw", "reader1")
    assert r1.acquire(timeout=TIMEOUT)
    r2 = clients["reader2"].ReadLock("/kz/rw", "reader2")
    assert r2.acquire(timeout=TIMEOUT)
    writer = clients["writer"].WriteLock("/kz/rw", "writer")

    def contend(lk):
        if lk.acquire(timeout=TIMEOUT):
            lk.release()

    threads = [threading.Thread(target=contend, args=(lk,)) for lk in (waiter, writer)]
    for t in threads:
        t.start()
    wait_children(clients["holder"], "/kz/lock", 2)
    wait_children(clients["holder"], "/kz/rw", 3)

    ids = {name: "0x%x" % c.client_id[0] for name, c in clients.items()}
    print("READY " + json.dumps(ids), flush=True)
    sys.stdin.readline()

    lock.release()
    r1.release()
    r2.release()
    for t in threads:
        t.join(TIMEOUT)
    for c in clients.values():
        c.stop()
        c.close()
    print("DONE", flush=True)


if __name__ == "__main__":
    main()
