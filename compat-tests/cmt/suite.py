#!/usr/bin/python3
"""cli_mt compat suite: python3 suite.py host:port

Drives the ZooKeeper 3.8 C client shell (cli_mt, Debian's zookeeper-bin)
against a server, interactively on stdin and in batch mode (cmd:...), and
checks its printed output. Prints one "PASS <check>" or "FAIL <check>:
<reason>" line per check and ends with "N passed, M failed"; exits 0 only if
every check passed. Only times and zxids are normalized; the ephemeral owner
is compared with the session id the client printed.
"""

import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))

from climt import Session, batch, normalize, stat_lines, zxids  # noqa: E402
from suitekit import CheckError, expect, two_session_main  # noqa: E402


def created(path, mode, name=None):
    """The output of a successful create of path in the given mode."""
    return [f"Creating [{path}] node (mode: {mode})", f"[{path}]: rc = 0", f"\tname = {name or path}"]


def changed(path):
    return f"Watcher CHANGED_EVENT state = CONNECTED_STATE for path {path}"


def child(path):
    return f"Watcher CHILD_EVENT state = CONNECTED_STATE for path {path}"


def children(lines, path):
    """Checks the ls header and returns the child names, sorted (server order varies)."""
    if not lines or lines[0] != f"{path}: rc = 0":
        raise CheckError(f"ls {path}: want header '{path}: rc = 0', got {lines}")
    kids = []
    for l in lines[1:]:
        if l.startswith("\tctime = "):  # ls2: the parent's stat follows
            break
        if l.startswith("\t"):
            kids.append(l[1:])
    return sorted(kids)


def checks(addr, a, b, base):
    """Yields (name, fn); a and b are two interactive sessions."""
    d = f"{base}/d"

    def connect():
        sa = a.wait_connected()
        sb = b.wait_connected()
        if sa == 0 or sa == sb:
            raise CheckError(f"session ids {sa:#x} and {sb:#x}")
        expect(a.run(f"create {base}"), created(base, 0), "create base")
    yield "connect two sessions and create the base node", connect

    def create_get():
        expect(a.run(f"create {d}"), created(d, 0), "create")
        got = a.run(f"get {d}")
        expect(normalize(got), [f"{d}: rc = 0", " value_len = 3", "new", "Stat:"] + stat_lines(), "get")
        cz, mz = zxids(got)
        if cz != mz or cz == 0:
            raise CheckError(f"new node: czxid {cz:x} mzxid {mz:x}")
    yield "create and get", create_get

    def create_modes():
        sid = f"{a.session_id:x}"
        expect(a.run(f"create +e {base}/e"), created(f"{base}/e", 1), "create +e")
        expect(a.run(f"create +s {base}/s-"), created(f"{base}/s-", 2, f"{base}/s-0000000002"), "create +s")
        expect(a.run(f"create +es {base}/es-"), created(f"{base}/es-", 3, f"{base}/es-0000000003"), "create +es")
        got = a.run(f"get {base}/e")
        expect(normalize(got), [f"{base}/e: rc = 0", " value_len = 3", "new", "Stat:"] + stat_lines(owner=sid),
               "get of the ephemeral (owner is the session id)")
    yield "create +e / +s / +es", create_modes

    def create2():
        got = a.run(f"create2 +s {base}/c2-")
        expect(normalize(got), [f"Creating [{base}/c2-] node (mode: 2)", f"[{base}/c2-]: rc = 0",
                                f"\tname = {base}/c2-0000000004"] + stat_lines(), "create2 +s")
        cz, mz = zxids(got)
        if cz != mz:
            raise CheckError(f"create2 stat: czxid {cz:x} != mzxid {mz:x}")
    yield "create2 returns a stat", create2

    # cli_mt's get and ls always leave a watch, so a later change made by
    # the same session prints the event just before the change's reply.
    def set_cmd():
        got = a.run(f"set {d} hello world")
        expect(normalize(got), [changed(d), f"{d}: rc = 0 Stat:"] + stat_lines(version=1),
               "set (the get of the previous check left a watch)")
        cz, mz = zxids(got)
        if not mz > cz:
            raise CheckError(f"mzxid {mz:x} should be past czxid {cz:x}")
        got = a.run(f"get {d}")
        expect(normalize(got), [f"{d}: rc = 0", " value_len = 11", "hello world", "Stat:"] + stat_lines(version=1),
               "get after set")
        expect(normalize(a.run(f"set {d} ")), [changed(d), f"{d}: rc = 0 Stat:"] + stat_lines(version=2),
               "set to empty data")
        expect(normalize(a.run(f"get {d}")), [f"{d}: rc = 0", " value_len = 0", "", "Stat:"] + stat_lines(version=2),
               "get of empty data")
    yield "set and get", set_cmd

    def ls_cmds():
        got = a.run(f"ls {base}")
        expect(children(got, base), sorted(["d", "e", "s-0000000002", "es-0000000003", "c2-0000000004"]), "ls children")
        expect(len(got), 6, f"ls output lines {got}")
        got = a.run(f"ls2 {base}")
        expect(children(got, base), sorted(["d", "e", "s-0000000002", "es-0000000003", "c2-0000000004"]), "ls2 children")
        expect(normalize(got[6:]), stat_lines(), "ls2 stat of the parent")
        expect(a.run(f"ls {d}"), [f"{d}: rc = 0"], "ls of a leaf")
    yield "ls and ls2", ls_cmds

    def delete_sync():
        expect(a.run(f"create {d}/x"), [f"Creating [{d}/x] node (mode: 0)", child(d), f"[{d}/x]: rc = 0", f"\tname = {d}/x"],
               "create child (ls left a child watch)")
        expect(a.run(f"delete {d}/x"), [f"{d}/x: rc = 0"], "delete")
        expect(a.run(f"ls {d}"), [f"{d}: rc = 0"], "ls after delete")
        expect(a.run(f"sync {d}"), [f"[{d}]: rc = 0", f"\tname = {d}"], "sync")
    yield "delete and sync", delete_sync

    def errors():
        m = f"{base}/missing"
        expect(a.run(f"get {m}"), [f"{m}: rc = -101", "", "Stat:", "null"], "get of a missing node")
        expect(a.run(f"set {m} x"), [f"{m}: rc = -101 Stat:", "null"], "set of a missing node")
        expect(a.run(f"delete {m}"), [f"{m}: rc = -101"], "delete of a missing node")
        expect(a.run(f"ls {m}"), [f"{m}: rc = -101"], "ls of a missing node")
        expect(a.run(f"create {m}/x"), [f"Creating [{m}/x] node (mode: 0)", f"[{m}/x]: rc = -101"],
               "create under a missing parent")
        expect(a.run(f"create {d}"), [f"Creating [{d}] node (mode: 0)", f"[{d}]: rc = -110"], "create of an existing node")
        expect(a.run(f"delete {base}"), [f"{base}: rc = -111"], "delete of a node with children")
        expect(a.run(f"create {base}/e/x"), [f"Creating [{base}/e/x] node (mode: 0)", f"[{base}/e/x]: rc = -108"],
               "create under an ephemeral")
        expect(a.run("delete /zookeeper"), ["/zookeeper: rc = -8"], "delete /zookeeper")
    yield "error codes (-101, -110, -111, -108, -8)", errors

    def watch_other_session():
        w = f"{base}/w"
        expect(a.run(f"create {w}"), [f"Creating [{w}] node (mode: 0)", child(base), f"[{w}]: rc = 0", f"\tname = {w}"],
               "create (ls of the base left a child watch)")
        a.run(f"get {w}")  # sets a data watch
        expect(normalize(b.run(f"set {w} x")), [f"{w}: rc = 0 Stat:"] + stat_lines(version=1), "set by session B")
        a.expect_lines([changed(w)])
        a.run(f"ls {w}")  # sets a child watch
        expect(b.run(f"create {w}/k"), created(f"{w}/k", 0), "create by session B")
        a.expect_lines([child(w)])
        b.run(f"set {w} y")  # the data watch is used up
        b.run(f"delete {w}/k")  # so is the child watch
        expect(a.run(f"sync {w}"), [f"[{w}]: rc = 0", f"\tname = {w}"], "no more events before the next reply")
    yield "get/ls watches fire once for another session's changes", watch_other_session

    def watch_same_session():
        w = f"{base}/w2"
        a.run(f"create {w}")
        a.run(f"get {w}")
        expect(normalize(a.run(f"set {w} z")),
               [changed(w), f"{w}: rc = 0 Stat:"] + stat_lines(version=1),
               "event before the reply of the set that caused it")
        a.run(f"get {w}")
        expect(a.run(f"delete {w}"),
               [f"Watcher DELETED_EVENT state = CONNECTED_STATE for path {w}", f"{w}: rc = 0"], "delete of a watched node")
    yield "a session's own change: event comes before the reply", watch_same_session

    def container():
        c = f"{base}/cont"
        expect(a.run(f"create +c {c}"), created(c, 4), "create +c")
        expect(a.run(f"create {c}/k"), created(f"{c}/k", 0), "create in the container")
        a.run(f"get {c}")  # watch the container
        expect(a.run(f"delete {c}/k"), [f"{c}/k: rc = 0"], "delete the last child")
        a.expect_lines([f"Watcher DELETED_EVENT state = CONNECTED_STATE for path {c}"], timeout=20)
        expect(a.run(f"ls {c}"), [f"{c}: rc = -101"], "ls after removal")
    yield "create +c makes a container that is removed when empty", container

    def ttl():
        t = f"{base}/ttl"
        expect(a.run(f"create +t=1000 {t}"), created(t, 5), "create +t=1000")
        got = a.run(f"get {t}")  # watch it
        expect(normalize(got), [f"{t}: rc = 0", " value_len = 3", "new", "Stat:"] + stat_lines(),
               "get of the TTL node (owner 0 on the wire)")
        a.expect_lines([f"Watcher DELETED_EVENT state = CONNECTED_STATE for path {t}"], timeout=20)
        expect(a.run(f"get {t}"), [f"{t}: rc = -101", "", "Stat:", "null"], "get after expiry")
    yield "create +t=ttl makes a TTL node that expires", ttl

    def config():
        got = a.run("config")
        expect(normalize(got), ["/zookeeper/config: rc = 0", " value_len = 0", "", "Stat:"] +
               stat_lines(aversion="ffffffff"), "config (standalone)")
    yield "config on a standalone server: empty data, aversion -1", config

    def reserved():
        got = a.run("ls /zookeeper")
        expect(children(got, "/zookeeper"), ["config", "quota"], "ls /zookeeper")
        m = "-add server.5=127.0.0.1:2888:3888;2181"
        expect(a.run(f"reconfig {m}"), [f"{m}: rc = -123", "", "Stat:", "null"], "reconfig (disabled: -123)")
    yield "ls /zookeeper and reconfig disabled", reserved

    def auth():
        expect(a.run("addauth digest alice:secret"), [], "addauth digest output")
        expect(normalize(a.run(f"get {d}"))[:2], [f"{d}: rc = 0", " value_len = 0"], "get after addauth digest")
        c = Session(addr, "session C")
        try:
            c.wait_connected()
            c.send("addauth nosuchscheme x")
            c.expect_lines(["Watcher SESSION_EVENT state = AUTH_FAILED_STATE", "Authentication failure. Shutting down..."])
        finally:
            c.kill()
    yield "addauth digest works; an unknown scheme fails the session", auth

    def quit_drops_ephemerals():
        rc = a.close()
        expect(rc, 0, "cli_mt exit status after quit")
        got = b.run(f"ls {base}")
        expect(children(got, base), sorted(["d", "s-0000000002", "c2-0000000004", "w"]), "children after A quit")
    yield "quit closes the session and deletes its ephemerals", quit_drops_ephemerals

    def batch_mode():
        p = f"{base}/batch"
        expect(batch(addr, f"create {p}"), (0, created(p, 0)), "batch create (status, output)")
        rc, got = batch(addr, f"get {p}")
        expect((rc, normalize(got)), (0, [f"{p}: rc = 0", " value_len = 3", "new", "Stat:"] + stat_lines()),
               "batch get (status, output)")
        expect(batch(addr, f"create {p}"), (0, [f"Creating [{p}] node (mode: 0)", f"[{p}]: rc = -110"]),
               "batch create of an existing node")
        rc, got = batch(addr, f"ls {base}")
        expect(rc, 0, "batch ls status")
        expect(children(got, base), sorted(["batch", "d", "s-0000000002", "c2-0000000004", "w"]), "batch ls")
        expect(batch(addr, f"delete {p}"), (0, [f"{p}: rc = 0"]), "batch delete")
        expect(batch(addr, f"get {p}"), (0, [f"{p}: rc = -101", "", "Stat:", "null"]), "batch get of the deleted node")
    yield "batch mode (cmd:...)", batch_mode


if __name__ == "__main__":
    sys.exit(two_session_main(sys.argv, "/cmt-", Session, checks))
