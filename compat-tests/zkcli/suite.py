#!/usr/bin/python3
"""zkCli.sh compat suite: python3 suite.py host:port

Drives ZooKeeper 3.8's zkCli.sh against a server and checks the printed
output of a scripted session. Prints one "PASS <check>" or "FAIL <check>:
<reason>" line per check and ends with "N passed, M failed"; exits 0 only if
every check passed. Only zxids, times and session ids are normalized.
"""

import base64
import hashlib
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))

from suitekit import CheckError, expect, two_session_main  # noqa: E402
from zkcli_session import Session, normalize, oneshot, parse_stat, stat_lines  # noqa: E402


def digest_id(user_password):
    user = user_password.split(":", 1)[0]
    return user + ":" + base64.b64encode(hashlib.sha1(user_password.encode()).digest()).decode()


def checks(addr, a, b, base):
    """Yields (name, fn); a and b are two interactive sessions."""
    p = f"{base}/p"

    def connect():
        a.wait_connected()
        b.wait_connected()
        expect(a.run(f"create {base}"), [f"Created {base}"], "create base")
    yield "connect two sessions and create the base node", connect

    def create_plain():
        expect(a.run(f"create {p} pdata"), [f"Created {p}"], "create with data")
        expect(a.run(f"get {p}"), ["pdata"], "get")
        expect(a.run(f"get {base}"), ["null"], "get of a node created without data")
        expect(a.run(f'create {base}/empty ""'), [f"Created {base}/empty"], "create with empty data")
        expect(a.run(f"get {base}/empty"), [""], "get of empty data")
    yield "create and get (data, no data, empty data)", create_plain

    def create_seq_eph():
        expect(a.run(f"create -s -e {p}/e- edata"), [f"Created {p}/e-0000000000"], "create -s -e")
        expect(a.run(f"create -s {p}/s-"), [f"Created {p}/s-0000000001"], "create -s")
        expect(a.run(f"create -e {base}/eph"), [f"Created {base}/eph"], "create -e")
    yield "create -s -e / -s / -e", create_seq_eph

    def get_s():
        got = a.run(f"get -s {p}/e-0000000000")
        expect(normalize(got), ["edata"] + stat_lines(owner="<session>", dataLength=5), "get -s output")
        st = parse_stat(got)
        if not st["cZxid"] == st["mZxid"] == st["pZxid"]:
            raise CheckError(f"new node: cZxid, mZxid and pZxid differ: {got}")
    yield "get -s shows data and stat of an ephemeral", get_s

    def ls_plain():
        expect(a.run(f"ls {p}"), ["[e-0000000000, s-0000000001]"], "ls")
        expect(a.run(f"ls {p}/s-0000000001"), ["[]"], "ls of a leaf")
    yield "ls", ls_plain

    def ls_s():
        got = a.run(f"ls -s {p}")
        expect(normalize(got), ["[e-0000000000, s-0000000001]"] +
               stat_lines(cversion=2, dataLength=5, numChildren=2), "ls -s output")
        st = parse_stat(got[1:])
        if not st["pZxid"] > st["cZxid"]:
            raise CheckError(f"pZxid should have moved past cZxid after child creates: {got}")
    yield "ls -s shows children and stat", ls_s

    def ls_r():
        a.run(f"create {p}/s-0000000001/deep")
        got = a.run(f"ls -R {p}")
        want = [p, f"{p}/e-0000000000", f"{p}/s-0000000001", f"{p}/s-0000000001/deep"]
        if not got or got[0] != p:
            raise CheckError(f"ls -R should start with {p}: {got}")
        expect(sorted(got), sorted(want), "ls -R paths")
    yield "ls -R lists the subtree", ls_r

    def set_plain():
        expect(a.run(f"set {p} newdata"), [], "set output")
        expect(a.run(f"get {p}"), ["newdata"], "get after set")
        got = a.run(f"set -s {p} v3")
        expect(normalize(got), stat_lines(cversion=2, dataVersion=2, dataLength=2, numChildren=2), "set -s output")
        st = parse_stat(got)
        if not st["mZxid"] > st["cZxid"]:
            raise CheckError(f"mZxid should be past cZxid after set: {got}")
        expect(a.run(f"set -v 1 {p} stale"), [f"version No is not valid : {p}"], "set -v with a stale version")
        expect(a.run(f"set -v 2 {p} v4"), [], "set -v with the current version")
    yield "set, set -s, set -v", set_plain

    def stat_cmd():
        got = a.run(f"stat {p}")
        expect(normalize(got), stat_lines(cversion=2, dataVersion=3, dataLength=2, numChildren=2), "stat output")
        expect(a.run(f"stat {base}/nope"), [f"Node does not exist: {base}/nope"], "stat of a missing node")
    yield "stat", stat_cmd

    def errors():
        missing = f"{base}/nope"
        expect(a.run(f"get {missing}"), [f"Node does not exist: {missing}"], "get of a missing node")
        expect(a.run(f"ls {missing}"), [f"Node does not exist: {missing}"], "ls of a missing node")
        expect(a.run(f"set {missing} x"), [f"Node does not exist: {missing}"], "set of a missing node")
        expect(a.run(f"delete {missing}"), [f"Node does not exist: {missing}"], "delete of a missing node")
        expect(a.run(f"create {missing}/x"), [f"Node does not exist: {missing}/x"], "create under a missing parent")
        expect(a.run(f"create {p} again"), [f"Node already exists: {p}"], "create of an existing node")
        expect(a.run(f"create {base}/eph/child"), [f"Ephemerals cannot have children: {base}/eph/child"],
               "create under an ephemeral")
        expect(a.run(f"delete {p}"), [f"Node not empty: {p}"], "delete of a node with children")
        expect(a.run(f"delete -v 9 {base}/empty"), [f"version No is not valid : {base}/empty"],
               "delete with a stale version")
    yield "error messages (missing node, node exists, not empty, bad version, ephemeral parent)", errors

    def delete_cmds():
        expect(a.run(f"delete {p}/s-0000000001/deep"), [], "delete output")
        expect(a.run(f"ls {p}/s-0000000001"), ["[]"], "ls after delete")
        for n in ["t", "t/a", "t/a/b", "t/c"]:
            a.run(f"create {base}/{n}")
        expect(a.run(f"deleteall {base}/t"), [], "deleteall output")
        expect(a.run(f"ls {base}/t"), [f"Node does not exist: {base}/t"], "ls after deleteall")
    yield "delete and deleteall", delete_cmds

    def sync_cmd():
        expect(a.run(f"sync {p}"), ["Sync is OK"], "sync output")
    yield "sync", sync_cmd

    def ephemerals():
        got = a.run("getEphemerals")
        expect(len(got), 1, f"getEphemerals output lines {got}")
        listed = sorted(x.strip() for x in got[0].strip("[]").split(","))
        expect(listed, sorted([f"{base}/eph", f"{p}/e-0000000000"]), "getEphemerals")
        expect(a.run(f"getEphemerals {p}"), [f"[{p}/e-0000000000]"], "getEphemerals with a prefix")
        expect(b.run("getEphemerals"), ["[]"], "getEphemerals of a session with none")
    yield "getEphemerals", ephemerals

    def children_number():
        expect(a.run(f"getAllChildrenNumber {p}"), ["2"], "getAllChildrenNumber")
        expect(a.run(f"getAllChildrenNumber {base}"), ["5"], "getAllChildrenNumber of the base")
    yield "getAllChildrenNumber", children_number

    def add_watch_recursive():
        w = f"{base}/w"
        expect(a.run(f"addWatch {w}"), [], "addWatch output")
        b.run(f"create {w}")
        a.event("NodeCreated", w)
        b.run(f"create {w}/c")
        a.event("NodeCreated", f"{w}/c")
        b.run(f"set {w}/c x")
        a.event("NodeDataChanged", f"{w}/c")
        b.run(f"delete {w}/c")
        a.event("NodeDeleted", f"{w}/c")
    yield "addWatch (default PERSISTENT_RECURSIVE) prints events", add_watch_recursive

    def add_watch_persistent():
        w = f"{base}/pw"
        expect(a.run(f"addWatch -m PERSISTENT {w}"), [], "addWatch -m PERSISTENT output")
        b.run(f"create {w}")
        a.event("NodeCreated", w)
        b.run(f"create {w}/k")
        a.event("NodeChildrenChanged", w)
        b.run(f"set {w}/k x")  # not watched: no event
        b.run(f"set {w} y")
        a.event("NodeDataChanged", w)
        b.run(f"set {w} z")
        a.event("NodeDataChanged", w)
    yield "addWatch -m PERSISTENT prints events and stays", add_watch_persistent

    def one_shot_watches():
        sw = f"{base}/sw"
        expect(a.run(f"stat -w {sw}"), [f"Node does not exist: {sw}"], "stat -w of a missing node")
        b.run(f"create {sw} 1")
        a.event("NodeCreated", sw)
        expect(a.run(f"get -w {sw}"), ["1"], "get -w")
        b.run(f"set {sw} 2")
        a.event("NodeDataChanged", sw)
        expect(a.run(f"ls -w {sw}"), ["[]"], "ls -w")
        b.run(f"set {sw} 3")  # the data watch was used up: no event
        b.run(f"create {sw}/kid")
        a.event("NodeChildrenChanged", sw)
    yield "stat -w, get -w, ls -w fire once", one_shot_watches

    def remove_watches():
        r = f"{base}/rw"
        a.run(f"create {r}")
        a.run(f"get -w {r}")
        expect(a.run(f"removewatches {r} -d"), [], "removewatches -d output")
        a.event("DataWatchRemoved", r)
        expect(a.run(f"removewatches {r} -d"), [f"KeeperErrorCode = No such watcher for {r}"],
               "removewatches -d with no data watch")
        a.run(f"ls -w {r}")
        expect(a.run(f"removewatches {r}"), [], "removewatches output")
        a.event("ChildWatchRemoved", r)
        expect(a.run(f"removewatches {r} -a"), [f"KeeperErrorCode = No such watcher for {r}"],
               "removewatches -a with no watch")
        a.run(f"addWatch {r}")
        expect(a.run(f"removewatches {r} -a"), [], "removewatches -a of a persistent watch")
        a.event("PersistentWatchRemoved", r)
        a.run(f"ls -w {r}")
        b.run(f"set {r} changed")  # no data watch left: no event
        b.run(f"create {r}/kid")
        a.event("NodeChildrenChanged", r)
    yield "removewatches (-d, -c, -a) and NoWatcher", remove_watches

    def reconfig():
        expect(a.run("reconfig -add server.5=127.0.0.1:2888:3888;2181"), ["KeeperErrorCode = Reconfig is disabled"],
               "reconfig on a server with reconfig disabled")
    yield "reconfig is disabled", reconfig

    def container():
        c = f"{base}/cont"
        expect(a.run(f"create -c {c}"), [f"Created {c}"], "create -c")
        expect(a.run(f"create {c}/kid"), [f"Created {c}/kid"], "create in the container")
        got = a.run(f"stat -w {c}")
        expect(normalize(got), stat_lines(cversion=1, numChildren=1), "stat of the container")
        expect(a.run(f"delete {c}/kid"), [], "delete the last child")
        a.event("NodeDeleted", c, timeout=20)
        expect(a.run(f"ls {c}"), [f"Node does not exist: {c}"], "ls after the container was removed")
        expect(a.run(f"create -c -s {c}"),
               ["-c cannot be combined with -s or -e. Containers cannot be ephemeral or sequential."],
               "create -c -s")
    yield "create -c makes a container that is removed when empty", container

    def ttl():
        t = f"{base}/ttl"
        expect(a.run(f"create -t 1000 {t} x"), [f"Created {t}"], "create -t")
        got = a.run(f"stat -w {t}")
        expect(normalize(got), stat_lines(dataLength=1), "stat of the TTL node")
        a.event("NodeDeleted", t, timeout=20)
        expect(a.run(f"get {t}"), [f"Node does not exist: {t}"], "get after expiry")
        expect(a.run(f"create -t 0 {t}"), ["ttl must be positive and cannot be larger than: 1099511627775"], "create -t 0")
    yield "create -t makes a TTL node that expires", ttl

    def acl():
        n = f"{base}/acl"
        alice = digest_id("alice:secret")
        expect(a.run("addauth digest alice:secret"), [], "addauth output")
        expect(a.run(f"create {n} secret"), [f"Created {n}"], "create")
        expect(a.run(f"getAcl {n}"), ["'world,'anyone", ": cdrwa"], "getAcl of an open node")
        expect(a.run(f"setAcl {n} auth::cdrwa"), [], "setAcl auth::cdrwa output")
        expect(a.run(f"getAcl {n}"), [f"'digest,'{alice}", ": cdrwa"], "getAcl after setAcl auth")
        got = a.run(f"setAcl -s {n} digest:{alice}:cdrwa,world:anyone:r")
        expect(normalize(got), stat_lines(aclVersion=2, dataLength=6), "setAcl -s output")
        expect(sorted(a.run(f"getAcl {n}")), sorted([f"'digest,'{alice}", ": cdrwa", "'world,'anyone", ": r"]),
               "getAcl with two entries")
        expect(a.run(f"setAcl -v 1 {n} world:anyone:r"), [f"version No is not valid : {n}"], "setAcl -v stale")
        expect(b.run(f"get {n}"), ["secret"], "read by another session (world:anyone:r)")
        expect(b.run(f"set {n} hacked"), [f"Insufficient permission : {n}"], "set without auth")
        expect(b.run(f"setAcl {n} world:anyone:cdrwa"), [f"Insufficient permission : {n}"], "setAcl without auth")
        expect(a.run(f"setAcl {n} auth::cdrwa"), [], "setAcl back to creator only")
        expect(b.run(f"get {n}"), [f"Insufficient permission : {n}"], "get without auth")
        expect(b.run("addauth digest alice:wrong"), [], "addauth with the wrong password")
        expect(b.run(f"get {n}"), [f"Insufficient permission : {n}"], "get with the wrong password")
        expect(b.run("addauth digest alice:secret"), [], "addauth with the right password")
        expect(b.run(f"get {n}"), ["secret"], "get after addauth")
    yield "addauth digest, setAcl, getAcl and permission errors", acl

    def quota():
        q = f"{base}/quota"
        a.run(f"create {q}")
        a.run(f"create {q}/a x")
        expect(a.run(f"setquota -n 5 {q}"), [], "setquota -n output")
        limits = [f"absolute path is /zookeeper/quota{q}/zookeeper_limits",
                  f"Output quota for {q} count=5,bytes=-1=;byteHardLimit=-1;countHardLimit=-1"]
        expect(a.run(f"listquota {q}"), limits + [f"Output stat for {q} count=2,bytes=1"], "listquota")
        a.run(f"create {q}/b yy")
        expect(a.run(f"listquota {q}"), limits + [f"Output stat for {q} count=3,bytes=3"],
               "listquota after a create (the server keeps zookeeper_stats)")
        a.run(f"set {q}/a xyz")
        a.run(f"delete {q}/b")
        expect(a.run(f"get /zookeeper/quota{q}/zookeeper_stats"), ["count=2,bytes=3"],
               "zookeeper_stats after a set and a delete")
        expect(a.run(f"delquota {q}"), [], "delquota output")
        expect(a.run(f"listquota {q}"), [f"absolute path is /zookeeper/quota{q}/zookeeper_limits",
                                          f"quota for {q} does not exist."], "listquota after delquota")
    yield "setquota, listquota, delquota (server-kept stats)", quota

    def whoami():
        got = a.run("whoami")
        if not got or got[0] != "Auth scheme: User":
            raise CheckError(f"whoami header: {got}")
        expect(sorted(got[1:]), ["digest: alice", "ip: 127.0.0.1"], "whoami identities")
    yield "whoami", whoami

    def config():
        expect(a.run("config"), [""], "config of a standalone server")
    yield "config (standalone: empty)", config

    def one_shot():
        rc, got = oneshot(addr, "get", p)
        expect((rc, got), (0, ["v4"]), "zkCli.sh get <existing> (status, output)")
        rc, got = oneshot(addr, "get", f"{base}/nope")
        expect((rc, got), (1, [f"Node does not exist: {base}/nope"]), "zkCli.sh get <missing> (status, output)")
        rc, got = oneshot(addr, "create", p)
        expect((rc, got), (1, [f"Node already exists: {p}"]), "zkCli.sh create <existing> (status, output)")
    yield "one-shot zkCli.sh commands and exit status", one_shot

    def quit_drops_ephemerals():
        a.close()
        expect(b.run(f"ls {p}"), ["[s-0000000001]"], "ls after the ephemeral owner quit")
        expect(b.run(f"stat {base}/eph"), [f"Node does not exist: {base}/eph"], "stat of the quit session's ephemeral")
    yield "quitting a session deletes its ephemerals", quit_drops_ephemerals


if __name__ == "__main__":
    sys.exit(two_session_main(sys.argv, "/zkcli-", Session, checks))
