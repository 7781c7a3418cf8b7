"""Drives cli_mt (the ZooKeeper 3.8 C client shell) for the cmt compat suite.

cli_mt is the multi-threaded build: the main thread reads commands from
stdin and sends them asynchronously; completions and watch events are
printed (to stderr) by the client's completion thread, in the order the
server answered. So a Session sends each command followed by a marker,
`get <missing path>`, and the command's output is everything printed before
the marker's "<path>: rc = -101" completion. Watch events ("Watcher
CHANGED_EVENT state = CONNECTED_STATE for path /x") are part of the output:
they come out in server order, before the reply to any later request.

The C client's own log lines (ZOO_ERROR@... with a timestamp) and the
"time = N msec" lines are kept apart from the output. Every wait is bounded;
a missed deadline raises CheckError.
"""

import queue
import re
import time

from suitekit import CheckError, Interactive, get_before, run_once, substitute

CLI_MT = "/usr/lib/zookeeper/bin/cli_mt"
MARK = "/cmt-suite-marker"
COMMAND_TIMEOUT = 20.0
EVENT_TIMEOUT = 15.0

_LOG = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}:\d+\(0x[0-9a-f]+\):ZOO_[A-Z]+@")
_TIME = re.compile(r"^time = -?\d+ msec$")
_SESSION = re.compile(r"^Got a new session id: 0x([0-9a-f]+)$")


class Session(Interactive):
    """One interactive cli_mt process connected to addr."""

    def __init__(self, addr, name):
        self.n = 0
        self.session_id = None
        self.logs = []
        self.out = queue.Queue()
        super().__init__([CLI_MT, addr], name, "cli_mt")

    def _read(self):
        for raw in self.proc.stdout:
            line = raw.rstrip("\n")
            if _LOG.match(line):
                self.logs.append(line)
            elif not _TIME.match(line):
                self.out.put(line)
        self.out.put(None)

    def _next(self, deadline, what, got):
        try:
            line = get_before(self.out, deadline)
        except queue.Empty:
            raise CheckError(f"{self.name}: {what} not seen in time; output so far {got}; client log {self.logs[-3:]}")
        if line is None:
            raise CheckError(f"{self.name}: cli_mt exited while waiting for {what}; output {got}; client log {self.logs[-3:]}")
        return line

    def wait_connected(self):
        """Waits for the session and returns its id."""
        self.expect_lines(["Watcher SESSION_EVENT state = CONNECTED_STATE"])
        deadline = time.monotonic() + EVENT_TIMEOUT
        line = self._next(deadline, "the session id", [])
        m = _SESSION.match(line)
        if not m:
            raise CheckError(f"{self.name}: want 'Got a new session id: 0x...', got {line!r}")
        self.session_id = int(m.group(1), 16)
        return self.session_id

    def run(self, command, timeout=COMMAND_TIMEOUT):
        """Sends one command and returns the lines printed until the marker's reply."""
        self.n += 1
        marker_path = f"{MARK}-{self.n}"
        self.send(command)
        self.send(f"get {marker_path}")
        deadline = time.monotonic() + timeout
        got = []
        what = f"the end of {command!r}"
        while True:
            line = self._next(deadline, what, got)
            if line == f"{marker_path}: rc = -101":
                break
            got.append(line)
        tail = [self._next(deadline, what, got) for _ in range(3)]
        if tail != ["", "Stat:", "null"]:
            raise CheckError(f"{self.name}: odd marker reply {tail} after {command!r}")
        return got

    def expect_lines(self, want, timeout=EVENT_TIMEOUT):
        """Waits for exactly the lines want (events printed while idle)."""
        deadline = time.monotonic() + timeout
        got = []
        while len(got) < len(want):
            got.append(self._next(deadline, f"{want}", got))
        if got != want:
            raise CheckError(f"{self.name}: want {want}, got {got}")


def batch(addr, command, timeout=COMMAND_TIMEOUT):
    """Runs `cli_mt addr cmd:<command>` and returns (exit status, lines).

    The banner ("Batch mode: ...", the session event and id), "time = "
    lines and the C client's log lines are dropped.
    """
    rc, out = run_once([CLI_MT, addr, "cmd:" + command], timeout, f"cli_mt batch {command!r}")
    lines = [l for l in out
             if not l.startswith("Batch mode: ")
             and l != "Watcher SESSION_EVENT state = CONNECTED_STATE"
             and not _SESSION.match(l) and not _TIME.match(l) and not _LOG.match(l)]
    return rc, lines


_CTIME = re.compile(r"^\tctime = .+$")
_MTIME = re.compile(r"^\tmtime=.+$")
_ZXID = re.compile(r"^\t(czxid|mzxid)=[0-9a-f]+$")


_VARYING = [(_CTIME, "\tctime = <time>"), (_MTIME, "\tmtime=<time>"), (_ZXID, r"\t\1=<zxid>")]


def normalize(lines):
    """Replaces what legitimately varies between runs: times and zxids."""
    return substitute(lines, _VARYING)


def stat_lines(version=0, aversion="0", owner="0"):
    """The normalized stat block cli_mt prints (dumpStat)."""
    return ["\tctime = <time>", "\tczxid=<zxid>", "\tmtime=<time>", "\tmzxid=<zxid>",
            f"\tversion={version}\taversion={aversion}", f"\tephemeralOwner = {owner}"]


def zxids(lines):
    """Returns (czxid, mzxid) of a printed stat block."""
    found = {}
    for l in lines:
        m = _ZXID.match(l)
        if m:
            found[m.group(1)] = int(l.split("=", 1)[1], 16)
    if len(found) != 2:
        raise CheckError(f"no czxid/mzxid in {lines}")
    return found["czxid"], found["mzxid"]

