"""Drives zkCli.sh (ZooKeeper 3.8's Java shell) for the zkcli compat suite.

A Session is one interactive zkCli.sh process fed on stdin (JLine is off when
stdin is not a terminal, so no prompt is printed). zkCli runs one line at a
time, synchronously, so every command is followed by a marker command,
`ls <missing path>`, whose "Node does not exist: <path>" line ends that
command's output. Watch notifications are printed asynchronously by the
client's event thread as "\\nWATCHER::" and "\\nWatchedEvent ..." lines; they
are taken out of the output stream and queued separately. Every wait is
bounded; a missed deadline raises CheckError.
"""

import os
import queue
import re
import time

from suitekit import CheckError, Interactive, get_before, run_once, substitute

ZKCLI = "/usr/share/zookeeper/bin/zkCli.sh"
MARK = "/zkcli-suite-marker"
COMMAND_TIMEOUT = 20.0
EVENT_TIMEOUT = 15.0


_CONNECTED = "WatchedEvent state:SyncConnected type:None path:null"


def _env():
    env = dict(os.environ)
    # A quicker JVM start; zkCli.sh passes CLIENT_JVMFLAGS to java.
    env["CLIENT_JVMFLAGS"] = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xshare:auto"
    return env


def _noise(line):
    return line.startswith("SLF4J:")


class Session(Interactive):
    """One interactive zkCli.sh session connected to addr."""

    def __init__(self, addr, name):
        self.n = 0
        self.out = queue.Queue()
        self.events = queue.Queue()
        super().__init__([ZKCLI, "-server", addr], name, "zkCli", env=_env())

    def _read(self):
        # The event thread prints "\nWATCHER::" and "\nWatchedEvent ..." with
        # one println each, so the blank line just before either belongs to
        # the event, not to the command output.
        pending_blank = False
        for raw in self.proc.stdout:
            line = raw.rstrip("\n")
            if line == "WATCHER::":
                pending_blank = False
                continue
            if line.startswith("WatchedEvent "):
                pending_blank = False
                self.events.put(line)
                continue
            if pending_blank:
                self.out.put("")
                pending_blank = False
            if line == "":
                pending_blank = True
                continue
            if not _noise(line):
                self.out.put(line)
        self.out.put(None)

    def _event(self, deadline, missing):
        """Returns the next event; raises CheckError(missing) at deadline."""
        try:
            return get_before(self.events, deadline)
        except queue.Empty:
            raise CheckError(f"{self.name}: {missing}")

    def wait_connected(self):
        deadline = time.monotonic() + EVENT_TIMEOUT
        while self._event(deadline, f"not connected within {EVENT_TIMEOUT} s") != _CONNECTED:
            pass
        # Discard the banner ("Connecting to", "Welcome to ZooKeeper!", ...).
        self.run(None)

    def run(self, command, timeout=COMMAND_TIMEOUT):
        """Runs one command (None: none) and returns its output lines."""
        self.n += 1
        marker_path = f"{MARK}-{self.n}"
        marker = f"Node does not exist: {marker_path}"
        if command is not None:
            self.send(command)
        self.send(f"ls {marker_path}")
        got = []
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = get_before(self.out, deadline)
            except queue.Empty:
                raise CheckError(f"{self.name}: {command!r} did not finish within {timeout} s; output so far {got}")
            if line is None:
                raise CheckError(f"{self.name}: zkCli exited during {command!r}; output {got}")
            if line == marker:
                return got
            got.append(line)

    def event(self, etype, path, timeout=EVENT_TIMEOUT):
        """Waits for the next node event, which must be etype on path."""
        want = f"WatchedEvent state:SyncConnected type:{etype} path:{path}"
        deadline = time.monotonic() + timeout
        while True:
            e = self._event(deadline, f"no event within {timeout} s, want {want!r}")
            if e == _CONNECTED:
                continue
            if e != want:
                raise CheckError(f"{self.name}: want {want!r}, got {e!r}")
            return


def oneshot(addr, *args, timeout=30.0):
    """Runs `zkCli.sh -server addr args...` and returns (exit status, lines)."""
    rc, out = run_once([ZKCLI, "-server", addr, *args], timeout, f"zkCli.sh {' '.join(args)}", env=_env())
    lines = [l for l in out
             if l and l != "WATCHER::" and not l.startswith("WatchedEvent ")
             and not l.startswith("Connecting to ") and not _noise(l)]
    return rc, lines


_ZXID = re.compile(r"^(cZxid|mZxid|pZxid) = 0x[0-9a-f]+$")
_TIME = re.compile(r"^(ctime|mtime) = .+$")
_OWNER = re.compile(r"^ephemeralOwner = 0x[0-9a-f]*[1-9a-f][0-9a-f]*$")


_VARYING = [(_ZXID, r"\1 = <zxid>"), (_TIME, r"\1 = <time>"), (_OWNER, "ephemeralOwner = <session>")]


def normalize(lines):
    """Replaces what legitimately varies between runs: zxids, times, session ids."""
    return substitute(lines, _VARYING)


STAT_FIELDS = ["cZxid", "ctime", "mZxid", "mtime", "pZxid", "cversion", "dataVersion",
               "aclVersion", "ephemeralOwner", "dataLength", "numChildren"]


def stat_lines(cversion=0, dataVersion=0, aclVersion=0, owner="0x0", dataLength=0, numChildren=0):
    """The normalized stat block zkCli prints."""
    return ["cZxid = <zxid>", "ctime = <time>", "mZxid = <zxid>", "mtime = <time>",
            "pZxid = <zxid>", f"cversion = {cversion}", f"dataVersion = {dataVersion}",
            f"aclVersion = {aclVersion}", f"ephemeralOwner = {owner}",
            f"dataLength = {dataLength}", f"numChildren = {numChildren}"]


def parse_stat(lines):
    """Returns the stat fields of a printed stat block as ints (zxids and owner from hex)."""
    st = {}
    for l in lines:
        k, sep, v = l.partition(" = ")
        if sep and k in STAT_FIELDS and k not in ("ctime", "mtime"):
            st[k] = int(v, 16) if v.startswith("0x") else int(v)
    missing = [k for k in STAT_FIELDS if k not in st and k not in ("ctime", "mtime")]
    if missing:
        raise CheckError(f"no stat fields {missing} in {lines}")
    return st

