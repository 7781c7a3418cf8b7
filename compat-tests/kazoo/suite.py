#!/usr/bin/python3
"""kazoo 2.8 compatibility suite for a ZooKeeper-compatible server.

Usage: /usr/bin/python3 suite.py HOST:PORT

Runs named checks against the server, prints one line per check
("PASS <name>" or "FAIL <name>: <reason>") and ends with exactly one line
"N passed, M failed". The exit status is 0 only if M == 0.

Every check works under its own random path prefix, uses its own
KazooClient sessions (stopped when the check ends), and is bounded in time:
each wait has a timeout and a watchdog fails a check that overruns its
budget. Sessions are expired for real with kazoo's trick: a second
connection that reattaches with the same session id and password and then
closes the session.
"""

import logging
import os
import socket
import sys
import threading
import time
import traceback
import uuid

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))

from kazoo.client import KazooClient  # noqa: E402
from kazoo.exceptions import (  # noqa: E402
    AuthFailedError,
    BadArgumentsError,
    InvalidACLError,
    NoAuthError,
    BadVersionError,
    NoChildrenForEphemeralsError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    RolledBackError,
    RuntimeInconsistency,
)
from kazoo.protocol.states import EventType, KazooState  # noqa: E402
from kazoo.recipe.cache import TreeCache, TreeEvent  # noqa: E402
from kazoo.recipe.lock import Semaphore, WriteLock  # noqa: E402
from kazoo.security import OPEN_ACL_UNSAFE, READ_ACL_UNSAFE, make_acl, make_digest_acl  # noqa: E402
from suitekit import Report  # noqa: E402

ADDR = None  # set in main
ROOT = "/kazoo-compat-" + uuid.uuid4().hex[:12]
SESSION_TIMEOUT = 10.0  # seconds asked by every client
DEFAULT_BUDGET = 30.0  # seconds a check may run before the watchdog fails it
SUITE_BUDGET = 85.0  # seconds for the whole suite

# Retry policy for recipes under contention: kazoo's default command retry
# gives up after one retry, which is too few when many clients race.
CONTENDED_RETRY = dict(max_tries=-1, delay=0.005, backoff=1.5,
                       max_jitter=0.02, max_delay=0.1, deadline=20.0)


class CheckFailed(Exception):
    """A check's assertion did not hold."""


def expect(cond, msg):
    if not cond:
        raise CheckFailed(msg)


def expect_eq(got, want, what):
    if got != want:
        raise CheckFailed("%s: got %r, want %r" % (what, got, want))


def expect_raises(exc_class, fn, *args, **kwargs):
    """Calls fn and asserts it raises exactly exc_class (or a subclass)."""
    try:
        fn(*args, **kwargs)
    except exc_class:
        return
    except Exception as e:  # noqa: BLE001 - report what was raised instead
        raise CheckFailed("%s%r: raised %s(%s), want %s" % (
            getattr(fn, "__name__", fn), args, type(e).__name__, e,
            exc_class.__name__))
    raise CheckFailed("%s%r: returned normally, want %s" % (
        getattr(fn, "__name__", fn), args, exc_class.__name__))


def wait_for(pred, timeout, what, interval=0.02):
    """Polls pred until it is true or fails the check after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        if pred():
            return
        if time.monotonic() > deadline:
            raise CheckFailed("timed out after %.1fs waiting for %s" % (timeout, what))
        time.sleep(interval)


def join_all(threads, timeout, what):
    deadline = time.monotonic() + timeout
    for th in threads:
        th.join(max(0.0, deadline - time.monotonic()))
    alive = [th.name for th in threads if th.is_alive()]
    expect(not alive, "timed out after %.1fs waiting for %s: %s still running" % (
        timeout, what, ", ".join(alive)))


class Ctx(object):
    """Per-check resources: a path prefix and the clients to stop."""

    def __init__(self, name):
        self.base = "%s/%s" % (ROOT, name)
        self.clients = []
        self.lock = threading.Lock()

    def path(self, *parts):
        return "/".join((self.base,) + parts)

    def client(self, start=True, **kwargs):
        kwargs.setdefault("timeout", SESSION_TIMEOUT)
        c = KazooClient(hosts=ADDR, **kwargs)
        with self.lock:
            self.clients.append(c)
        if start:
            c.start(timeout=10)
        return c

    def close(self):
        for c in self.clients:
            try:
                c.stop()
                c.close()
            except Exception:  # noqa: BLE001 - best-effort cleanup
                pass


def expire_session(client, timeout=20.0):
    """Expires client's session for real and waits for kazoo to see LOST.

    A second connection reattaches to the session with the same id and
    password (which makes the server drop the first connection) and then
    closes the session; when the first client reconnects the server answers
    that the session expired. Races (the first client reconnecting before
    the close) are handled by repeating.
    """
    lost = threading.Event()

    def listener(state):
        if state == KazooState.LOST:
            lost.set()

    sid, passwd = client.client_id
    client.add_listener(listener)
    try:
        deadline = time.monotonic() + timeout
        attempts = 0
        while not lost.is_set():
            if time.monotonic() > deadline:
                raise CheckFailed("session 0x%x not expired after %d attempts in %.0fs" % (
                    sid, attempts, timeout))
            attempts += 1
            other = KazooClient(hosts=ADDR, client_id=(sid, passwd), timeout=SESSION_TIMEOUT)
            try:
                other.start(timeout=5)
                other.stop()
            except Exception:  # noqa: BLE001 - retry on the next round
                pass
            finally:
                other.close()
            lost.wait(1.5)
    finally:
        client.remove_listener(listener)
    return sid


def wait_connected(client, timeout, what):
    wait_for(lambda: client.state == KazooState.CONNECTED and client.connected,
             timeout, what)


# --------------------------------------------------------------------------
# Checks. Each takes a Ctx; it passes by returning and fails by raising.

CHECKS = []


def check(name, budget=DEFAULT_BUDGET):
    def register(fn):
        CHECKS.append((name, fn, budget))
        return fn
    return register


@check("crud-and-versions")
def check_crud(ctx):
    c = ctx.client()
    c.ensure_path(ctx.base)
    p = ctx.path("node")
    expect_eq(c.create(p, b"v0"), p, "create returns the path")
    data, st = c.get(p)
    expect_eq(data, b"v0", "data after create")
    expect_eq((st.version, st.cversion, st.aversion, st.numChildren, st.ephemeralOwner),
              (0, 0, 0, 0, 0), "stat after create (version, cversion, aversion, numChildren, ephemeralOwner)")
    expect_eq(st.dataLength, 2, "dataLength")
    expect(st.czxid == st.mzxid == st.pzxid, "czxid, mzxid, pzxid equal after create: %r" % (st,))

    st1 = c.set(p, b"v1", version=0)
    expect_eq(st1.version, 1, "version after set")
    expect(st1.mzxid > st.mzxid, "mzxid grows on set")
    expect_eq(st1.czxid, st.czxid, "czxid unchanged by set")
    st2 = c.set(p, b"v2")  # unconditional
    expect_eq(st2.version, 2, "version after unconditional set")
    expect_raises(BadVersionError, c.set, p, b"x", version=1)
    expect_eq(c.get(p)[0], b"v2", "data unchanged by a failed set")

    # children, cversion and pzxid
    kid = c.create(p + "/kid", b"")
    st3 = c.exists(p)
    expect_eq((st3.cversion, st3.numChildren), (1, 1), "parent (cversion, numChildren) after child create")
    expect_eq(st3.pzxid, c.exists(kid).czxid, "parent pzxid is the child's czxid")
    expect_eq(c.get_children(p), ["kid"], "children")
    children, cst = c.get_children(p, include_data=True)
    expect_eq((children, cst.numChildren), (["kid"], 1), "get_children include_data")

    # create2 (include_data) returns the new node's stat
    p2, st4 = c.create(ctx.path("withstat"), b"abc", include_data=True)
    expect_eq((p2, st4.version, st4.dataLength), (ctx.path("withstat"), 0, 3), "create include_data")

    # sequential names: 10-digit suffixes that grow
    s1 = c.create(ctx.path("seq-"), sequence=True)
    s2 = c.create(ctx.path("seq-"), sequence=True)
    expect(len(s1) == len(ctx.path("seq-")) + 10, "sequential suffix has 10 digits: %s" % s1)
    expect(int(s2[-10:]) > int(s1[-10:]), "sequence grows: %s then %s" % (s1, s2))

    # makepath and ensure_path
    deep = ctx.path("a", "b", "c")
    c.create(deep, b"d", makepath=True)
    expect_eq(c.get(deep)[0], b"d", "data of a makepath create")
    expect(c.ensure_path(deep) is not None, "ensure_path on an existing path")

    # ephemeral owner
    e = c.create(ctx.path("eph"), ephemeral=True)
    expect_eq(c.exists(e).ephemeralOwner, c.client_id[0], "ephemeralOwner is the session id")

    # deletes
    expect_raises(BadVersionError, c.delete, kid, version=5)
    c.delete(kid, version=0)
    expect(c.exists(kid) is None, "exists after delete returns None")
    st5 = c.exists(p)
    expect_eq((st5.cversion, st5.numChildren), (2, 0), "parent (cversion, numChildren) after child delete")
    c.delete(ctx.path("a"), recursive=True)
    expect(c.exists(ctx.path("a")) is None, "recursive delete removed the subtree")
    c.sync(p)


@check("error-classes")
def check_errors(ctx):
    c = ctx.client()
    c.ensure_path(ctx.base)
    p = ctx.path("n")
    c.create(p, b"")
    expect_raises(NodeExistsError, c.create, p, b"")
    expect_raises(NoNodeError, c.get, ctx.path("missing"))
    expect_raises(NoNodeError, c.set, ctx.path("missing"), b"")
    expect_raises(NoNodeError, c.delete, ctx.path("missing"))
    expect_raises(NoNodeError, c.get_children, ctx.path("missing"))
    expect_raises(NoNodeError, c.create, ctx.path("no", "parent"), b"")
    expect(c.exists(ctx.path("missing")) is None, "exists of a missing node is None")
    expect_raises(BadVersionError, c.set, p, b"", version=3)
    expect_raises(BadVersionError, c.delete, p, version=3)
    c.create(p + "/child", b"")
    expect_raises(NotEmptyError, c.delete, p)
    e = c.create(ctx.path("eph"), ephemeral=True)
    expect_raises(NoChildrenForEphemeralsError, c.create, e + "/child", b"")
    expect_raises(NoChildrenForEphemeralsError, c.create, e + "/seq-", b"", sequence=True)
    # The server refuses to delete its own nodes with BadArguments.
    expect_raises(BadArgumentsError, c.delete, "/zookeeper")
    expect_raises(BadArgumentsError, c.delete, "/zookeeper/quota")
    expect_raises(BadArgumentsError, c.delete, "/zookeeper/config")
    expect_raises(BadArgumentsError, c.delete, "/")
    # The session still works after all those errors.
    expect_eq(c.get(p)[0], b"", "read after errors")


@check("transaction-commit")
def check_txn_ok(ctx):
    c = ctx.client()
    c.ensure_path(ctx.base)
    c.create(ctx.path("existing"), b"old")
    c.create(ctx.path("doomed"), b"")
    t = c.transaction()
    t.create(ctx.path("new"), b"n")
    t.set_data(ctx.path("new"), b"n2")
    t.check(ctx.path("existing"), 0)
    t.set_data(ctx.path("existing"), b"new", version=0)
    t.delete(ctx.path("doomed"))
    t.create(ctx.path("s-"), b"", sequence=True)
    t.create(ctx.path("s-"), b"", sequence=True)
    res = t.commit()
    expect_eq(len(res), 7, "number of results")
    expect_eq(res[0], ctx.path("new"), "create result")
    expect_eq(res[1].version, 1, "set_data result version")
    expect_eq(res[2], True, "check result")
    expect_eq(res[3].version, 1, "set_data on existing result version")
    expect_eq(res[4], True, "delete result")
    expect(int(res[6][-10:]) == int(res[5][-10:]) + 1,
           "sequential creates in one multi get consecutive numbers: %r %r" % (res[5], res[6]))
    expect_eq(c.get(ctx.path("new"))[0], b"n2", "data of node created then set in one txn")
    expect_eq(c.get(ctx.path("existing"))[0], b"new", "data set in txn")
    expect(c.exists(ctx.path("doomed")) is None, "node deleted in txn")
    # All ops of a multi share one zxid.
    z_new = c.exists(ctx.path("new")).czxid
    expect_eq(c.exists(ctx.path("existing")).mzxid, z_new, "ops of a txn share the zxid")
    # context-manager form
    with c.transaction() as t2:
        t2.create(ctx.path("cm"), b"x")
    expect_eq(c.get(ctx.path("cm"))[0], b"x", "txn via context manager")


@check("transaction-rollback")
def check_txn_fail(ctx):
    c = ctx.client()
    c.ensure_path(ctx.base)
    c.create(ctx.path("guard"), b"g")
    c.set(ctx.path("guard"), b"g1")  # version 1
    before = c.exists(ctx.base)
    t = c.transaction()
    t.create(ctx.path("a"), b"a")
    t.set_data(ctx.path("guard"), b"changed")
    t.check(ctx.path("guard"), 0)  # wrong: version is 1 (2 after the set above)
    t.create(ctx.path("b"), b"b")
    res = t.commit()
    expect_eq(len(res), 4, "number of results")
    expect(isinstance(res[0], RolledBackError), "result 0 is RolledBackError: %r" % (res[0],))
    expect(isinstance(res[1], RolledBackError), "result 1 is RolledBackError: %r" % (res[1],))
    expect(isinstance(res[2], BadVersionError), "result 2 is BadVersionError: %r" % (res[2],))
    expect(isinstance(res[3], RuntimeInconsistency), "result 3 is RuntimeInconsistency: %r" % (res[3],))
    expect(c.exists(ctx.path("a")) is None, "create before the failing op not applied")
    expect(c.exists(ctx.path("b")) is None, "create after the failing op not applied")
    data, st = c.get(ctx.path("guard"))
    expect_eq((data, st.version), (b"g1", 1), "set_data before the failing op not applied")
    after = c.exists(ctx.base)
    expect_eq((after.cversion, after.pzxid), (before.cversion, before.pzxid), "parent unchanged by a failed txn")
    # A failing create (node exists) is reported as NodeExistsError.
    t = c.transaction()
    t.delete(ctx.path("guard"))
    t.create(ctx.path("guard"), b"")
    t.create(ctx.path("guard"), b"")
    res = t.commit()
    expect(isinstance(res[0], RolledBackError) and isinstance(res[1], RolledBackError)
           and isinstance(res[2], NodeExistsError), "results %r" % (res,))
    expect_eq(c.get(ctx.path("guard"))[0], b"g1", "guard untouched")


@check("data-watch")
def check_data_watch(ctx):
    c = ctx.client()
    w = ctx.client()
    c.ensure_path(ctx.base)
    p = ctx.path("dw")
    seen = []
    cond = threading.Condition()

    def on_change(data, stat, event):
        with cond:
            seen.append((data, stat.version if stat else None, event.type if event else None))
            cond.notify_all()

    w.DataWatch(p, on_change)

    def wait_len(n):
        with cond:
            ok = cond.wait_for(lambda: len(seen) >= n, timeout=10)
        expect(ok, "DataWatch calls: got %r, waiting for call %d" % (seen, n))

    wait_len(1)
    c.create(p, b"v0")
    wait_len(2)
    c.set(p, b"v1")
    wait_len(3)
    c.set(p, b"v2")
    wait_len(4)
    c.delete(p)
    wait_len(5)
    c.create(p, b"again")
    wait_len(6)
    want = [
        (None, None, None),
        (b"v0", 0, EventType.CREATED),
        (b"v1", 1, EventType.CHANGED),
        (b"v2", 2, EventType.CHANGED),
        (None, None, EventType.DELETED),
        (b"again", 0, EventType.CREATED),
    ]
    expect_eq(seen, want, "DataWatch calls in order")


@check("children-watch")
def check_children_watch(ctx):
    c = ctx.client()
    w = ctx.client()
    p = ctx.path("cw")
    c.ensure_path(p)
    seen = []
    cond = threading.Condition()

    def on_children(children, event):
        with cond:
            seen.append((sorted(children), event.type if event else None))
            cond.notify_all()

    w.ChildrenWatch(p, on_children, send_event=True)

    def wait_len(n):
        with cond:
            ok = cond.wait_for(lambda: len(seen) >= n, timeout=10)
        expect(ok, "ChildrenWatch calls: got %r, waiting for call %d" % (seen, n))

    wait_len(1)
    c.create(p + "/a")
    wait_len(2)
    c.create(p + "/b", ephemeral=True)
    wait_len(3)
    c.set(p + "/a", b"data change is not a child change")
    c.delete(p + "/a")
    wait_len(4)
    c.create(p + "/c")
    wait_len(5)
    want = [
        ([], None),
        (["a"], EventType.CHILD),
        (["a", "b"], EventType.CHILD),
        (["b"], EventType.CHILD),
        (["b", "c"], EventType.CHILD),
    ]
    expect_eq(seen, want, "ChildrenWatch calls in order")


@check("one-shot-watches")
def check_raw_watches(ctx):
    c = ctx.client()
    w = ctx.client()
    p = ctx.path("w")
    c.ensure_path(ctx.base)
    events = []
    cond = threading.Condition()

    def record(tag):
        def fn(event):
            with cond:
                events.append((tag, event.type, event.path))
                cond.notify_all()
        return fn

    def wait_len(n):
        with cond:
            ok = cond.wait_for(lambda: len(events) >= n, timeout=10)
        expect(ok, "watch events: got %r, waiting for event %d" % (events, n))

    expect(w.exists(p, watch=record("exists")) is None, "node absent at first")
    c.create(p, b"")
    wait_len(1)
    w.get(p, watch=record("get"))
    w.get_children(p, watch=record("children"))
    c.create(p + "/k")
    wait_len(2)
    c.set(p, b"x")
    wait_len(3)
    w.exists(p, watch=record("exists2"))
    w.get_children(p, watch=record("children2"))
    c.delete(p + "/k")
    c.delete(p)
    wait_len(5)
    time.sleep(0.2)  # a grace period for any wrongly duplicated event
    want = [
        ("exists", EventType.CREATED, p),
        ("children", EventType.CHILD, p),
        ("get", EventType.CHANGED, p),
        ("children2", EventType.CHILD, p),
        ("exists2", EventType.DELETED, p),
    ]
    with cond:
        got = list(events)
    expect_eq(got, want, "one-shot watch events in order")


@check("acl-and-auth")
def check_acl(ctx):
    owner = ctx.client(auth_data=[("digest", "alice:secret")])
    anon = ctx.client()
    owner.ensure_path(ctx.base)
    p = ctx.path("private")
    acl = [make_digest_acl("alice", "secret", all=True)]
    owner.create(p, b"hidden", acl=acl)
    got, st = owner.get_acls(p)
    expect_eq(len(got), 1, "number of ACL entries")
    expect_eq((got[0].id.scheme, got[0].id.id, got[0].perms), (acl[0].id.scheme, acl[0].id.id, 31),
              "ACL entry (scheme, id, perms)")
    expect_eq(owner.get(p)[0], b"hidden", "owner reads")
    expect_raises(NoAuthError, anon.get, p)
    expect_raises(NoAuthError, anon.set, p, b"x")
    expect_raises(NoAuthError, anon.create, p + "/kid", b"")
    # (exists on an unreadable node is not checked: 3.8.0-3.8.3 answer the
    # stat, 3.8.4+ answer NoAuth.)
    anon.add_auth("digest", "alice:secret")
    expect_eq(anon.get(p)[0], b"hidden", "read after add_auth")
    # aversion and set_acls with a version
    st1 = owner.set_acls(p, OPEN_ACL_UNSAFE, version=0)
    expect_eq(st1.aversion, 1, "aversion after set_acls")
    expect_raises(BadVersionError, owner.set_acls, p, OPEN_ACL_UNSAFE, version=0)
    expect_eq(ctx.client().get(p)[0], b"hidden", "a fresh session reads an open node")
    ro = ctx.path("readonly")
    owner.create(ro, b"r", acl=READ_ACL_UNSAFE)
    expect_raises(NoAuthError, anon.set, ro, b"w")
    expect_raises(NoAuthError, anon.delete, ro + "/none")  # DELETE on the parent is checked first
    expect_eq(anon.get(ro)[0], b"r", "read of a read-only node")
    # The "auth" scheme: the creator's authenticated ids.
    ap = ctx.path("authscheme")
    owner.create(ap, b"", acl=[make_acl("auth", "", all=True)])
    ids = sorted((a.id.scheme, a.id.id) for a in owner.get_acls(ap)[0])
    expect_eq(ids, [("digest", acl[0].id.id)], "ACL of an 'auth' scheme create")
    # Invalid ACLs: "auth" while unauthenticated, an empty list (only a
    # transaction sends it; create() swaps [] for the default ACL), a bad
    # world id.
    bad = ctx.client()
    expect_raises(InvalidACLError, bad.create, ctx.path("noauth"), b"", acl=[make_acl("auth", "", all=True)])
    expect_raises(InvalidACLError, owner.create, ctx.path("badworld"), b"", acl=[make_acl("world", "someone", all=True)])
    t = owner.transaction()
    t.create(ctx.path("emptyacl"), b"", acl=[])
    res = t.commit()
    expect(len(res) == 1 and isinstance(res[0], InvalidACLError), "transaction create with an empty ACL: %r" % (res,))
    expect(owner.exists(ctx.path("emptyacl")) is None, "node with an empty ACL created")
    try:
        bad.add_auth("nosuchscheme", "x")
        raise CheckFailed("add_auth with an unknown scheme succeeded")
    except AuthFailedError:
        pass


@check("pipelined-async")
def check_async(ctx):
    c = ctx.client()
    c.ensure_path(ctx.base)
    n = 200
    creates = [c.create_async(ctx.path("n%03d" % i), b"%d" % i) for i in range(n)]
    sets = [c.set_async(ctx.path("n%03d" % i), b"v%d" % i) for i in range(n)]
    gets = [c.get_async(ctx.path("n%03d" % i)) for i in range(n)]
    missing = [c.exists_async(ctx.path("missing%d" % i)) for i in range(20)]
    dup = c.create_async(ctx.path("n000"), b"")
    kids = c.get_children_async(ctx.base)
    for i, r in enumerate(creates):
        expect_eq(r.get(timeout=10), ctx.path("n%03d" % i), "create %d" % i)
    for i, r in enumerate(sets):
        expect_eq(r.get(timeout=10).version, 1, "set %d version" % i)
    for i, r in enumerate(gets):
        expect_eq(r.get(timeout=10)[0], b"v%d" % i, "get %d" % i)
    for r in missing:
        expect(r.get(timeout=10) is None, "exists of a missing node")
    expect_raises(NodeExistsError, dup.get, timeout=10)
    expect_eq(sorted(kids.get(timeout=10)), ["n%03d" % i for i in range(n)], "children after pipelined creates")
    # Replies came back in request order: zxids of the creates grow.
    zx = [c.exists(ctx.path("n%03d" % i)).czxid for i in range(n)]
    expect(zx == sorted(zx) and len(set(zx)) == n, "czxids follow request order")


@check("large-data")
def check_large(ctx):
    c = ctx.client()
    c.ensure_path(ctx.base)
    blob = bytes(range(256)) * 3000  # 768000 bytes, below the 1 MiB jute.maxbuffer
    p = ctx.path("big")
    c.create(p, blob)
    data, st = c.get(p)
    expect_eq(st.dataLength, len(blob), "dataLength")
    expect(data == blob, "large data round trip")
    names = ["child-%04d-%s" % (i, "x" * 40) for i in range(500)]
    t = c.transaction()
    for name in names:
        t.create(p + "/" + name)
    res = t.commit()
    expect(all(isinstance(r, str) for r in res), "multi of 500 creates: %r" % [r for r in res if not isinstance(r, str)][:3])
    expect_eq(sorted(c.get_children(p)), names, "children of a large multi")


@check("chroot")
def check_chroot(ctx):
    plain = ctx.client()
    plain.ensure_path(ctx.base)
    rooted = KazooClient(hosts=ADDR + ctx.base, timeout=SESSION_TIMEOUT)
    ctx.clients.append(rooted)
    rooted.start(timeout=10)
    expect_eq(rooted.create("/inner", b"i"), "/inner", "create under a chroot returns the relative path")
    expect_eq(plain.get(ctx.path("inner"))[0], b"i", "the node is under the chroot")
    events = []
    got = threading.Event()

    def watch(ev):
        events.append((ev.type, ev.path))
        got.set()

    rooted.get("/inner", watch=watch)
    plain.set(ctx.path("inner"), b"j")
    expect(got.wait(10), "no watch event under the chroot")
    expect_eq(events, [(EventType.CHANGED, "/inner")], "event path relative to the chroot")
    s = rooted.create("/seq-", b"", sequence=True)
    expect(s.startswith("/seq-") and len(s) == len("/seq-") + 10, "sequential name under a chroot: %r" % s)
    t = rooted.transaction()
    t.create("/txn", b"")
    t.check("/inner", 1)
    expect_eq(t.commit(), ["/txn", True], "transaction under a chroot")
    expect(plain.exists(ctx.path("txn")) is not None, "transaction node under the chroot")


@check("four-letter-words")
def check_4lw(ctx):
    c = ctx.client()
    expect_eq(c.command(b"ruok"), "imok", "ruok")
    srvr = c.command(b"srvr")
    expect("Mode:" in srvr and "Zxid:" in srvr, "srvr output: %r" % srvr[:200])
    v = c.server_version()
    expect(len(v) >= 3 and v[0] == 3 and v[1] >= 8, "server_version from envi: %r" % (v,))


@check("wrong-password-reattach")
def check_wrong_password(ctx):
    c = ctx.client()
    c.ensure_path(ctx.base)
    e = c.create(ctx.path("eph"), b"", ephemeral=True)
    sid, passwd = c.client_id
    wrong = bytes((b ^ 0xFF) for b in passwd)
    intruder = KazooClient(hosts=ADDR, client_id=(sid, wrong), timeout=SESSION_TIMEOUT)
    ctx.clients.append(intruder)
    intruder.start(timeout=10)
    # The server answers "expired"; kazoo then starts a new session.
    expect(intruder.client_id[0] != sid, "a wrong password reattached to session 0x%x" % sid)
    # The server may drop the owner's connection (ZooKeeper does, before it
    # checks the password), but the session survives: the owner reconnects.
    wait_connected(c, 10, "the owner to be connected again")
    expect_eq(c.exists(e).ephemeralOwner, sid, "owner's ephemeral")
    expect_eq(c.client_id[0], sid, "owner's session id")


@check("state-listener-connected")
def check_state_connected(ctx):
    c = ctx.client(start=False)
    states = []
    c.add_listener(lambda s: states.append(s))
    c.start(timeout=10)
    wait_for(lambda: KazooState.CONNECTED in states, 5, "CONNECTED in %r" % states)
    expect(c.connected, "client reports connected")
    sid, passwd = c.client_id
    expect(sid != 0 and len(passwd) == 16, "session id and 16-byte password: %r" % ((sid, passwd),))
    c.stop()
    wait_for(lambda: KazooState.LOST in states, 5, "LOST after stop in %r" % states)


@check("session-expiry")
def check_session_expiry(ctx):
    c = ctx.client(start=False)
    states = []
    c.add_listener(lambda s: states.append(s))
    c.start(timeout=10)
    other = ctx.client()
    c.ensure_path(ctx.base)
    e1 = c.create(ctx.path("eph-"), b"", ephemeral=True, sequence=True)
    e2 = c.create(ctx.path("eph-plain"), b"", ephemeral=True)
    deleted = threading.Event()
    expect(other.exists(e1, watch=lambda ev: ev.type == EventType.DELETED and deleted.set()) is not None,
           "ephemeral visible before expiry")
    old_sid = expire_session(c)
    expect(deleted.wait(10), "another session's watch on the ephemeral did not fire DELETED")
    expect(KazooState.CONNECTED in states[:states.index(KazooState.LOST)],
           "CONNECTED before LOST: %r" % states)
    # kazoo starts a new session after LOST.
    wait_for(lambda: c.connected and c.client_id and c.client_id[0] != old_sid, 15,
             "a new session after expiry")
    for e in (e1, e2):
        expect(other.exists(e) is None, "ephemeral %s of the expired session still exists" % e)
        expect(c.exists(e) is None, "ephemeral %s visible to the new session" % e)
    # The new session works and owns new ephemerals.
    e3 = c.create(ctx.path("eph-new"), b"", ephemeral=True)
    expect_eq(other.exists(e3).ephemeralOwner, c.client_id[0], "owner of an ephemeral of the new session")


class PausableProxy(object):
    """A TCP proxy to the server whose traffic can be cut off.

    While paused it closes every proxied connection and accepts new ones
    only to close them, so a client behind it can neither ping nor
    reconnect: its session must then expire on the server by timeout.
    """

    def __init__(self, target):
        host, port = target.rsplit(":", 1)
        self.target = (host, int(port))
        self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(16)
        self.addr = "127.0.0.1:%d" % self.lsock.getsockname()[1]
        self.paused = threading.Event()
        self.closed = False
        self.mu = threading.Lock()
        self.socks = []
        threading.Thread(target=self._accept, daemon=True, name="proxy-accept").start()

    def _accept(self):
        while not self.closed:
            try:
                conn, _ = self.lsock.accept()
            except OSError:
                return
            if self.paused.is_set():
                conn.close()
                continue
            try:
                up = socket.create_connection(self.target, timeout=5)
                up.settimeout(None)
            except OSError:
                conn.close()
                continue
            with self.mu:
                self.socks += [conn, up]
            for a, b in ((conn, up), (up, conn)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True, name="proxy-pump").start()

    def _pump(self, src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data or self.paused.is_set():
                    break
                dst.sendall(data)
        except OSError:
            pass
        for sk in (src, dst):
            try:
                sk.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sk.close()

    def pause(self):
        self.paused.set()
        with self.mu:
            socks, self.socks = self.socks, []
        for sk in socks:
            try:
                sk.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sk.close()

    def resume(self):
        self.paused.clear()

    def close(self):
        self.closed = True
        self.pause()
        self.lsock.close()


@check("session-expiry-by-timeout")
def check_session_timeout(ctx):
    proxy = PausableProxy(ADDR)
    try:
        c = KazooClient(hosts=proxy.addr, timeout=2.0)
        ctx.clients.append(c)
        states = []
        c.add_listener(lambda s: states.append(s))
        c.start(timeout=10)
        observer = ctx.client()
        observer.ensure_path(ctx.base)
        e = c.create(ctx.path("eph"), b"", ephemeral=True)
        sid = c.client_id[0]
        deleted = threading.Event()
        observer.exists(e, watch=lambda ev: ev.type == EventType.DELETED and deleted.set())
        cut_at = time.monotonic()
        proxy.pause()
        # Negotiated timeout is 2 s (tickTime 500 ms allows 1-10 s); the
        # server must expire the session soon after it.
        expect(deleted.wait(12), "ephemeral of a silent session not deleted within 12 s")
        took = time.monotonic() - cut_at
        expect(took >= 1.0, "session expired %.2fs after its traffic stopped (timeout 2 s)" % took)
        expect(observer.exists(e) is None, "ephemeral still exists")
        proxy.resume()
        wait_for(lambda: KazooState.LOST in states, 15, "LOST after reconnecting to an expired session (%r)" % states)
        wait_for(lambda: c.connected and c.client_id[0] != sid, 15, "a new session")
    finally:
        proxy.close()


@check("reconnect-same-session")
def check_reconnect(ctx):
    proxy = PausableProxy(ADDR)
    try:
        c = KazooClient(hosts=proxy.addr, timeout=SESSION_TIMEOUT)
        ctx.clients.append(c)
        states = []
        c.add_listener(lambda s: states.append(s))
        c.start(timeout=10)
        c.ensure_path(ctx.base)
        e = c.create(ctx.path("eph"), b"", ephemeral=True)
        sid, passwd = c.client_id
        proxy.pause()
        wait_for(lambda: KazooState.SUSPENDED in states, 10, "SUSPENDED after the connection dropped (%r)" % states)
        proxy.resume()
        wait_for(lambda: states[-1] == KazooState.CONNECTED, 15, "CONNECTED again (%r)" % states)
        expect(KazooState.LOST not in states, "session lost on a short disconnect: %r" % states)
        expect_eq(c.client_id, (sid, passwd), "session id and password after reconnect")
        expect_eq(c.exists(e).ephemeralOwner, sid, "ephemeral owner after reconnect")
        c.set(e, b"still mine")
        expect_eq(ctx.client().get(e)[0], b"still mine", "write after reconnect")
    finally:
        proxy.close()


@check("system-nodes")
def check_system_nodes(ctx):
    c = ctx.client()
    expect_eq(sorted(c.get_children("/zookeeper")), ["config", "quota"], "children of /zookeeper")
    data, st = c.get("/zookeeper/config")
    expect_eq(data, b"", "standalone /zookeeper/config data")
    expect_raises(NoAuthError, c.set, "/zookeeper/config", b"x")
    expect(c.exists("/") is not None, "root exists")
    expect("zookeeper" in c.get_children("/"), "/zookeeper among the children of /")


def run_lock_contention(ctx, clients_n, rounds):
    """Many sessions contend for one Lock; returns (tokens, overlaps, errors)."""
    lock_path = ctx.path("lock")
    guard = threading.Lock()
    state = {"holder": None, "overlaps": [], "tokens": [], "errors": []}
    start = threading.Barrier(clients_n)
    clients = [ctx.client() for _ in range(clients_n)]

    def worker(i, c):
        try:
            lock = c.Lock(lock_path, "worker-%d" % i)
            start.wait(10)
            for r in range(rounds):
                ok = lock.acquire(timeout=20)
                if not ok:
                    raise CheckFailed("worker %d round %d: acquire returned False" % (i, r))
                try:
                    with guard:
                        if state["holder"] is not None:
                            state["overlaps"].append((state["holder"], i))
                        state["holder"] = i
                    st = c.exists(lock.path + "/" + lock.node)
                    if st is None:
                        raise CheckFailed("worker %d: own lock node %s missing" % (i, lock.node))
                    with guard:
                        state["tokens"].append((st.czxid, i, lock.node))
                    time.sleep(0.002)
                    with guard:
                        if state["holder"] != i:
                            state["overlaps"].append((i, state["holder"]))
                        state["holder"] = None
                finally:
                    lock.release()
        except Exception as e:  # noqa: BLE001 - reported by the check
            with guard:
                state["errors"].append("worker %d: %s: %s" % (i, type(e).__name__, e))

    threads = [threading.Thread(target=worker, args=(i, c), name="lock-worker-%d" % i, daemon=True)
               for i, c in enumerate(clients)]
    for th in threads:
        th.start()
    join_all(threads, 40, "lock workers")
    return state


@check("lock-mutual-exclusion-and-fencing", budget=45)
def check_lock(ctx):
    clients_n, rounds = 8, 5
    state = run_lock_contention(ctx, clients_n, rounds)
    expect(not state["errors"], "worker errors: %s" % "; ".join(state["errors"]))
    expect(not state["overlaps"], "critical sections overlapped: %r" % state["overlaps"][:5])
    tokens = state["tokens"]
    expect_eq(len(tokens), clients_n * rounds, "number of acquisitions")
    for prev, cur in zip(tokens, tokens[1:]):
        expect(cur[0] > prev[0], "fencing tokens (czxid of the holder's node) not strictly increasing: "
               "0x%x (%s) then 0x%x (%s)" % (prev[0], prev[2], cur[0], cur[2]))
    seqs = [int(t[2][-10:]) for t in tokens]
    expect(seqs == sorted(seqs), "lock granted out of sequence order: %r" % seqs)
    c = ctx.client()
    expect_eq(c.get_children(ctx.path("lock")), [], "lock nodes left after all releases")


@check("lock-release-on-session-expiry")
def check_lock_expiry(ctx):
    holder = ctx.client()
    waiter = ctx.client()
    lock_path = ctx.path("lock")
    hl = holder.Lock(lock_path, "holder")
    expect(hl.acquire(timeout=10), "holder acquires")
    holder_node = hl.path + "/" + hl.node
    holder_token = holder.exists(holder_node).czxid
    wl = waiter.Lock(lock_path, "waiter")
    got = {}

    def wait_lock():
        try:
            got["ok"] = wl.acquire(timeout=25)
            got["at"] = time.monotonic()
        except Exception as e:  # noqa: BLE001 - reported below
            got["err"] = "%s: %s" % (type(e).__name__, e)

    th = threading.Thread(target=wait_lock, name="lock-waiter", daemon=True)
    th.start()
    wait_for(lambda: len(waiter.get_children(lock_path)) == 2, 10, "the waiter's lock node")
    time.sleep(0.2)
    expect("ok" not in got and "err" not in got, "waiter got the lock while it was held: %r" % got)
    expire_session(holder)
    expired_at = time.monotonic()
    join_all([th], 15, "the waiter to acquire after the holder's session expired")
    expect("err" not in got, "waiter failed: %s" % got.get("err"))
    expect(got.get("ok") is True, "waiter acquired: %r" % got)
    expect(got["at"] - expired_at < 10, "waiter acquired %.1fs after expiry" % (got["at"] - expired_at))
    expect(waiter.exists(holder_node) is None, "holder's lock node still exists after expiry")
    wst = waiter.exists(wl.path + "/" + wl.node)
    expect(wst.czxid > holder_token, "waiter's fencing token 0x%x not above holder's 0x%x" % (wst.czxid, holder_token))
    wl.release()


@check("read-write-lock", budget=40)
def check_rw_lock(ctx):
    path = ctx.path("rw")
    c1, c2, c3 = ctx.client(), ctx.client(), ctx.client()
    r1 = c1.ReadLock(path, "r1")
    r2 = c2.ReadLock(path, "r2")
    w3 = WriteLock(c3, path, "w3")
    expect(r1.acquire(timeout=10), "first reader acquires")
    expect(r2.acquire(timeout=10), "second reader acquires while the first holds (shared)")
    expect(w3.acquire(blocking=False) is False, "writer acquires while readers hold")
    r1.release()
    expect(w3.acquire(blocking=False) is False, "writer acquires while one reader holds")
    r2.release()
    expect(w3.acquire(timeout=10), "writer acquires once readers released")
    expect(r1.acquire(blocking=False) is False, "reader acquires while the writer holds")
    w3.release()
    expect(r1.acquire(timeout=10), "reader acquires after the writer released")
    r1.release()

    # Readers queued behind a writer all get in together once it releases,
    # and a writer queued behind them waits until every reader released.
    # (Readers are never queued between two writers: kazoo 2.8's ReadLock
    # then deadlocks on any server, python-zk/kazoo#649.)
    n = 4
    wc = ctx.client()
    w = WriteLock(wc, path, "w")
    expect(w.acquire(timeout=10), "writer acquires")
    guard = threading.Lock()
    st = {"holding": 0, "released": 0, "errors": [], "acquired": 0}
    all_in = threading.Barrier(n)
    go_out = threading.Event()
    rclients = [ctx.client() for _ in range(n)]

    def reader(i):
        try:
            lk = rclients[i].ReadLock(path, "r%d" % i)
            expect(lk.acquire(timeout=20), "r%d acquire" % i)
            with guard:
                st["acquired"] += 1
                st["holding"] += 1
            try:
                # Every reader must hold at the same time as all others.
                all_in.wait(10)
                expect(go_out.wait(10), "r%d: no signal to release" % i)
            finally:
                with guard:
                    st["holding"] -= 1
                    st["released"] += 1
                lk.release()
        except Exception as e:  # noqa: BLE001
            with guard:
                st["errors"].append("r%d: %s: %s" % (i, type(e).__name__, e))

    threads = [threading.Thread(target=reader, args=(i,), daemon=True, name="rw-r%d" % i) for i in range(n)]
    for th in threads:
        th.start()
    wait_for(lambda: len(wc.get_children(path)) == n + 1, 10, "the readers' lock nodes")
    time.sleep(0.2)
    expect_eq(st["acquired"], 0, "readers that got in while the writer held")
    w.release()
    wait_for(lambda: st["holding"] == n or st["errors"], 10, "all readers holding together")
    expect(not st["errors"], "errors: %s" % "; ".join(st["errors"]))
    w2 = WriteLock(ctx.client(), path, "w2")
    res = {}

    def writer():
        try:
            res["ok"] = w2.acquire(timeout=15)
            with guard:
                res["holding_readers"] = st["holding"]
        except Exception as e:  # noqa: BLE001
            res["err"] = "%s: %s" % (type(e).__name__, e)

    wth = threading.Thread(target=writer, daemon=True, name="rw-w2")
    wth.start()
    wait_for(lambda: len(wc.get_children(path)) == n + 1, 10, "the second writer's lock node")
    time.sleep(0.2)
    expect(not res, "second writer got in while readers held: %r" % res)
    go_out.set()
    join_all(threads + [wth], 15, "readers to release and the second writer to acquire")
    expect(not st["errors"], "errors: %s" % "; ".join(st["errors"]))
    expect(res.get("ok") is True, "second writer: %r" % res)
    expect_eq(res["holding_readers"], 0, "readers still holding when the writer got in")
    w2.release()
    expect_eq(wc.get_children(path), [], "lock nodes left")


@check("semaphore", budget=40)
def check_semaphore(ctx):
    path = ctx.path("sem")
    max_leases = 3
    holders = [ctx.client() for _ in range(max_leases)]
    sems = [Semaphore(c, path, "h%d" % i, max_leases=max_leases) for i, c in enumerate(holders)]
    for s in sems:
        expect(s.acquire(timeout=10), "lease %s acquired" % s.data)
    extra = Semaphore(ctx.client(), path, "extra", max_leases=max_leases)
    expect(extra.acquire(blocking=False) is False, "a lease beyond max_leases granted")
    expect_eq(len(sems[0].lease_holders()), max_leases, "lease_holders")
    sems[0].release()
    expect(extra.acquire(timeout=10), "lease granted once one was released")
    extra.release()
    for s in sems[1:]:
        s.release()

    guard = threading.Lock()
    st = {"inside": 0, "max": 0, "errors": [], "count": 0}
    n, rounds = 8, 3
    start = threading.Barrier(n)

    def worker(i, c):
        try:
            sem = Semaphore(c, path, "w%d" % i, max_leases=max_leases)
            start.wait(10)
            for _ in range(rounds):
                expect(sem.acquire(timeout=20), "w%d acquire" % i)
                try:
                    with guard:
                        st["inside"] += 1
                        st["count"] += 1
                        st["max"] = max(st["max"], st["inside"])
                    time.sleep(0.02)
                    with guard:
                        st["inside"] -= 1
                finally:
                    sem.release()
        except Exception as e:  # noqa: BLE001
            with guard:
                st["errors"].append("w%d: %s: %s" % (i, type(e).__name__, e))

    threads = [threading.Thread(target=worker, args=(i, ctx.client()), daemon=True, name="sem-%d" % i)
               for i in range(n)]
    for th in threads:
        th.start()
    join_all(threads, 30, "semaphore workers")
    expect(not st["errors"], "errors: %s" % "; ".join(st["errors"]))
    expect_eq(st["count"], n * rounds, "leases taken")
    expect(st["max"] <= max_leases, "%d concurrent holders, max_leases %d" % (st["max"], max_leases))


@check("election-failover")
def check_election(ctx):
    path = ctx.path("election")
    n = 3
    clients = [ctx.client() for _ in range(n)]
    guard = threading.Lock()
    leaders = []
    stops = [threading.Event() for _ in range(n)]
    errors = []

    def lead(i):
        with guard:
            leaders.append(i)
        stops[i].wait(25)

    def contend(i):
        try:
            clients[i].Election(path, "c%d" % i).run(lead, i)
        except Exception as e:  # noqa: BLE001 - expected for the stopped leader
            with guard:
                errors.append((i, "%s: %s" % (type(e).__name__, e)))

    threads = [threading.Thread(target=contend, args=(i,), daemon=True, name="elect-%d" % i) for i in range(n)]
    for th in threads:
        th.start()
    wait_for(lambda: len(leaders) >= 1, 10, "a first leader")
    probe = ctx.client()
    wait_for(lambda: len(probe.Election(path).contenders()) == n, 10, "all contenders")
    contenders = probe.Election(path).contenders()
    first = leaders[0]
    expect_eq(contenders[0], "c%d" % first, "the first contender is the leader")
    expect_eq(sorted(contenders), sorted("c%d" % i for i in range(n)), "contenders")
    time.sleep(0.2)
    expect_eq(len(leaders), 1, "leaders while the first leads")
    clients[first].stop()  # the leader's session closes
    wait_for(lambda: len(leaders) >= 2, 10, "a new leader after the leader's client stopped")
    second = leaders[1]
    expect(second != first, "the stopped leader won again")
    wait_for(lambda: probe.Election(path).contenders()[:1] == ["c%d" % second], 5,
             "new leader first among contenders")
    expect_eq(len(probe.Election(path).contenders()), n - 1, "contenders after failover")
    for ev in stops:
        ev.set()
    join_all([threads[i] for i in range(n) if i != first], 15, "election threads")


@check("barrier")
def check_barrier(ctx):
    path = ctx.path("barrier")
    c1, c2 = ctx.client(), ctx.client()
    b1 = c1.Barrier(path)
    b1.create()
    b2 = c2.Barrier(path)
    expect(b2.wait(timeout=0.3) is False, "wait returned True while the barrier is up")
    res = {}

    def waiter():
        res["ok"] = b2.wait(timeout=15)
        res["at"] = time.monotonic()

    th = threading.Thread(target=waiter, daemon=True, name="barrier-waiter")
    th.start()
    time.sleep(0.3)
    expect("ok" not in res, "waiter passed a raised barrier")
    removed_at = time.monotonic()
    expect(b1.remove(), "remove returned False")
    join_all([th], 10, "the barrier waiter")
    expect(res.get("ok") is True, "wait after remove returned %r" % res.get("ok"))
    expect(c2.exists(path) is None, "barrier node still exists")
    expect(b2.wait(timeout=1) is True, "wait on an absent barrier")
    expect(res["at"] >= removed_at, "waiter passed before removal")


@check("double-barrier")
def check_double_barrier(ctx):
    path = ctx.path("dbarrier")
    n = 3
    clients = [ctx.client() for _ in range(n)]
    guard = threading.Lock()
    st = {"arrived": 0, "entered_seen": [], "leaving": 0, "left_seen": [], "errors": []}

    def member(i):
        try:
            db = clients[i].DoubleBarrier(path, n, "m%d" % i)
            if i == n - 1:
                time.sleep(0.5)  # the others must wait for the last one
            with guard:
                st["arrived"] += 1
            db.enter()
            expect(db.participating, "m%d not participating after enter" % i)
            with guard:
                st["entered_seen"].append(st["arrived"])
            if i == 0:
                time.sleep(0.5)  # the others must wait for m0 to leave
            with guard:
                st["leaving"] += 1
            db.leave()
            with guard:
                st["left_seen"].append(st["leaving"])
        except Exception as e:  # noqa: BLE001
            with guard:
                st["errors"].append("m%d: %s: %s" % (i, type(e).__name__, e))

    threads = [threading.Thread(target=member, args=(i,), daemon=True, name="db-%d" % i) for i in range(n)]
    for th in threads:
        th.start()
    join_all(threads, 20, "double barrier members")
    expect(not st["errors"], "errors: %s" % "; ".join(st["errors"]))
    expect_eq(st["entered_seen"], [n] * n, "members present when each enter returned")
    expect_eq(st["left_seen"], [n] * n, "members leaving when each leave returned")
    expect_eq(clients[0].get_children(path), [], "nodes left under the barrier")


@check("counter-concurrent")
def check_counter(ctx):
    path = ctx.path("counter")
    n, incs = 6, 10
    clients = [ctx.client(command_retry=CONTENDED_RETRY) for _ in range(n)]
    guard = threading.Lock()
    posts = []
    errors = []
    start = threading.Barrier(n)

    def worker(i):
        try:
            ctr = clients[i].Counter(path)
            start.wait(10)
            for _ in range(incs):
                ctr += 1
                with guard:
                    posts.append((ctr.pre_value, ctr.post_value))
        except Exception as e:  # noqa: BLE001
            with guard:
                errors.append("w%d: %s: %s" % (i, type(e).__name__, e))

    threads = [threading.Thread(target=worker, args=(i,), daemon=True, name="ctr-%d" % i) for i in range(n)]
    for th in threads:
        th.start()
    join_all(threads, 25, "counter workers")
    expect(not errors, "errors: %s" % "; ".join(errors))
    total = n * incs
    expect_eq(clients[0].Counter(path).value, total, "final counter value")
    expect_eq(sorted(p for _, p in posts), list(range(1, total + 1)), "post values (each exactly once)")
    expect(all(p == pre + 1 for pre, p in posts), "post == pre + 1")
    ctr = clients[0].Counter(path)
    ctr -= 5
    expect_eq(ctr.value, total - 5, "value after subtract")
    fc = clients[0].Counter(ctx.path("float"), default=0.0)
    fc += 2.5
    expect_eq(fc.value, 2.5, "float counter")


@check("party")
def check_party(ctx):
    path = ctx.path("party")
    c1, c2, c3 = ctx.client(), ctx.client(), ctx.client()
    p1, p2, p3 = c1.Party(path, "alice"), c2.Party(path, "bob"), c3.Party(path, "carol")
    for p in (p1, p2, p3):
        p.join()
    expect_eq(len(p1), 3, "party size")
    expect_eq(sorted(p2), ["alice", "bob", "carol"], "party members")
    p2.leave()
    expect_eq(sorted(p1), ["alice", "carol"], "members after a leave")
    c3.stop()  # session closed: its ephemeral member node goes away
    wait_for(lambda: sorted(p1) == ["alice"], 5, "member removed when its session closed")
    sp1 = c1.ShallowParty(ctx.path("shallow"), "x")
    sp2 = c2.ShallowParty(ctx.path("shallow"), "y")
    sp1.join()
    sp2.join()
    expect_eq(sorted(sp1), ["x", "y"], "shallow party members")
    expect_eq(len(sp2), 2, "shallow party size")


@check("queue")
def check_queue(ctx):
    path = ctx.path("queue")
    c = ctx.client()
    q = c.Queue(path)
    expect(q.get() is None, "get on an empty queue")
    q.put(b"low", priority=200)
    q.put(b"high", priority=10)
    q.put(b"mid1")
    q.put(b"mid2")
    expect_eq(len(q), 4, "queue length")
    got = [q.get() for _ in range(4)]
    expect_eq(got, [b"high", b"mid1", b"mid2", b"low"], "priority then FIFO order")
    expect(q.get() is None, "get after draining")

    # Several consumers in separate sessions: each item taken exactly once.
    items = [("item-%02d" % i).encode() for i in range(30)]
    for it in items:
        q.put(it)
    guard = threading.Lock()
    taken = []
    errors = []

    def consumer(i, cc):
        try:
            qq = cc.Queue(path)
            while True:
                v = qq.get()
                if v is None:
                    return
                with guard:
                    taken.append(v)
        except Exception as e:  # noqa: BLE001
            with guard:
                errors.append("consumer %d: %s: %s" % (i, type(e).__name__, e))

    threads = [threading.Thread(target=consumer, args=(i, ctx.client(command_retry=CONTENDED_RETRY)),
                                daemon=True, name="q-%d" % i) for i in range(3)]
    for th in threads:
        th.start()
    join_all(threads, 20, "queue consumers")
    expect(not errors, "errors: %s" % "; ".join(errors))
    expect_eq(sorted(taken), items, "items consumed exactly once")
    expect_eq(len(q), 0, "queue length after draining")


@check("locking-queue")
def check_locking_queue(ctx):
    path = ctx.path("lqueue")
    c1, c2 = ctx.client(), ctx.client()
    q1, q2 = c1.LockingQueue(path), c2.LockingQueue(path)
    q1.put(b"first")
    q1.put_all([b"second", b"third"])
    q1.put(b"urgent", priority=1)
    expect_eq(len(q1), 4, "queue length")
    expect_eq(q1.get(timeout=5), b"urgent", "first get (priority)")
    expect(q1.holds_lock(), "consumer holds the entry's lock")
    expect_eq(q2.get(timeout=5), b"first", "second consumer skips the locked entry")
    expect(q2.release(), "release without consuming")
    expect(not q2.holds_lock(), "holds_lock after release")
    expect_eq(q1.get(timeout=5), b"urgent", "get again returns the entry being processed")
    expect(q1.consume(), "consume")
    expect_eq(len(q1), 3, "queue length after consume")
    order = []
    for _ in range(3):
        v = q2.get(timeout=5)
        order.append(v)
        expect(q2.consume(), "consume %r" % v)
    expect_eq(order, [b"first", b"second", b"third"], "FIFO order")
    expect(q2.get(timeout=0.3) is None, "get on an empty queue times out with None")

    # A blocked get wakes up when an entry is put.
    res = {}

    def getter():
        res["v"] = q1.get(timeout=15)

    th = threading.Thread(target=getter, daemon=True, name="lq-getter")
    th.start()
    time.sleep(0.2)
    q2.put(b"late")
    join_all([th], 10, "the blocked get")
    expect_eq(res.get("v"), b"late", "value for the blocked get")
    expect(q1.consume(), "consume late")
    # An entry locked by a session that ends becomes available again.
    q2.put(b"orphan")
    c3 = ctx.client()
    q3 = c3.LockingQueue(path)
    expect_eq(q3.get(timeout=5), b"orphan", "third consumer gets the entry")
    expect(q1.get(timeout=0.3) is None, "a locked entry was handed out twice")
    c3.stop()
    expect_eq(q1.get(timeout=5), b"orphan", "entry unlocked by the consumer's session close")
    expect(q1.consume(), "consume orphan")


@check("tree-cache")
def check_tree_cache(ctx):
    path = ctx.path("tc")
    c = ctx.client()
    c.create(path + "/a", b"A", makepath=True)
    c.create(path + "/a/b", b"B")
    w = ctx.client()
    cache = TreeCache(w, path)
    events = []
    cond = threading.Condition()

    def listener(ev):
        with cond:
            events.append(ev)
            cond.notify_all()

    cache.listen(listener)
    cache.start()

    def wait_event(pred, what):
        with cond:
            ok = cond.wait_for(lambda: any(pred(e) for e in events), timeout=10)
            got = [(e.event_type, e.event_data.path if e.event_data else None) for e in events]
        expect(ok, "timed out waiting for %s; events %r" % (what, got))

    try:
        wait_event(lambda e: e.event_type == TreeEvent.INITIALIZED, "INITIALIZED")
        with cond:
            init = [e for e in events]
        added = sorted(e.event_data.path for e in init if e.event_type == TreeEvent.NODE_ADDED)
        expect_eq(added, sorted([path, path + "/a", path + "/a/b"]), "NODE_ADDED before INITIALIZED")
        expect_eq(init[-1].event_type, TreeEvent.INITIALIZED, "INITIALIZED comes last")
        expect_eq(cache.get_data(path + "/a").data, b"A", "cached data")
        expect_eq(cache.get_data(path + "/a/b").data, b"B", "cached data of a grandchild")
        expect_eq(sorted(cache.get_children(path)), ["a"], "cached children")
        mark = len(init)

        c.create(path + "/c", b"C")
        wait_event(lambda e: e.event_type == TreeEvent.NODE_ADDED and e.event_data.path == path + "/c", "NODE_ADDED /c")
        c.set(path + "/a", b"A2")
        wait_event(lambda e: e.event_type == TreeEvent.NODE_UPDATED and e.event_data.path == path + "/a", "NODE_UPDATED /a")
        c.delete(path + "/a/b")
        wait_event(lambda e: e.event_type == TreeEvent.NODE_REMOVED and e.event_data.path == path + "/a/b", "NODE_REMOVED /a/b")
        with cond:
            later = [(e.event_type, e.event_data.path) for e in events[mark:]]
        want = [
            (TreeEvent.NODE_ADDED, path + "/c"),
            (TreeEvent.NODE_UPDATED, path + "/a"),
            (TreeEvent.NODE_REMOVED, path + "/a/b"),
        ]
        expect_eq(later, want, "events after initialization")
        expect_eq(cache.get_data(path + "/a").data, b"A2", "cached data after update")
        expect_eq(cache.get_data(path + "/a").stat.version, 1, "cached stat version after update")
        expect(cache.get_data(path + "/a/b") is None, "removed node still cached")
        expect_eq(sorted(cache.get_children(path)), ["a", "c"], "cached children after create")
    finally:
        cache.close()


# --------------------------------------------------------------------------

def run_check(name, fn, budget):
    """Runs fn in a daemon thread; returns None on success or a reason."""
    ctx = Ctx(name)
    outcome = {}

    def body():
        try:
            fn(ctx)
            outcome["ok"] = True
        except CheckFailed as e:
            outcome["err"] = str(e)
        except Exception as e:  # noqa: BLE001 - any error fails the check
            outcome["err"] = "%s: %s | %s" % (type(e).__name__, e,
                                              traceback.format_exc().strip().replace("\n", " | "))
        finally:
            ctx.close()

    th = threading.Thread(target=body, name="check-" + name, daemon=True)
    th.start()
    th.join(budget)
    if th.is_alive():
        return "timed out after %.0fs" % budget
    if "ok" in outcome:
        return None
    return outcome.get("err", "no outcome")


def main():
    global ADDR
    if len(sys.argv) != 2:
        print("usage: %s HOST:PORT" % sys.argv[0], file=sys.stderr)
        return 2
    ADDR = sys.argv[1]
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, os.environ.get("KAZOO_SUITE_LOG", "ERROR").upper(), logging.ERROR),
        format="%(asctime)s %(threadName)s %(name)s %(levelname)s %(message)s")
    only = set(filter(None, os.environ.get("KAZOO_SUITE_ONLY", "").split(",")))
    suite_deadline = time.monotonic() + SUITE_BUDGET
    report = Report()
    for name, fn, budget in CHECKS:
        if only and name not in only:
            continue
        remaining = suite_deadline - time.monotonic()
        started = time.monotonic()
        if remaining <= 1:
            reason = "suite time budget exhausted before the check started"
        else:
            reason = run_check(name, fn, min(budget, remaining))
        took = time.monotonic() - started
        if reason is None:
            report.ok(name)
        else:
            report.fail(name, reason)
        print("# %s took %.2fs" % (name, took), file=sys.stderr, flush=True)
    # Best-effort cleanup of the suite's tree.
    try:
        c = KazooClient(hosts=ADDR, timeout=SESSION_TIMEOUT)
        c.start(timeout=5)
        c.delete(ROOT, recursive=True)
        c.stop()
        c.close()
    except Exception:  # noqa: BLE001
        pass
    return report.summary()


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Threads of abandoned checks (if any) must not keep the process alive.
    os._exit(code)
