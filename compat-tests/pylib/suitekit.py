"""Shared parts of the Python client suites (cmt, zkcli, kazoo).

A suite prints one "PASS <check>" or "FAIL <check>: <reason>" line per check
and ends with exactly one "N passed, M failed" line; its exit status is 0
only if M is 0. Report keeps that bookkeeping. Interactive and run_once
drive a client shell process (cli_mt, zkCli.sh) in its own process group,
and two_session_main is the main program of a suite that works with two
interactive sessions.

Invariants: every wait is bounded (a missed deadline raises CheckError or
ends in SIGKILL of the process group); a check passes only by returning,
any exception fails it; the summary line is printed exactly once.

A suite imports this module after adding this folder to sys.path:

    sys.dont_write_bytecode = True
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
"""

import os
import signal
import subprocess
import sys
import threading
import time

SUITE_DEADLINE = 80.0  # seconds a two-session suite may spend on its checks


class CheckError(Exception):
    """A check's expectation did not hold; the message says how."""


def expect(got, want, what):
    if got != want:
        raise CheckError(f"{what}: want {want}, got {got}")


class Report:
    """Counts and prints check outcomes.

    With a deadline (seconds from construction), check() fails every check
    that would start after it instead of running it.
    """

    def __init__(self, deadline=None):
        self.passed = 0
        self.failed = 0
        self.deadline = deadline
        self.start = time.monotonic()

    def check(self, name, fn):
        """Runs fn(); it passes by returning and fails by raising."""
        if self.deadline is not None and time.monotonic() - self.start > self.deadline:
            self.fail(name, f"not run: suite time limit of {self.deadline} s reached")
            return
        try:
            fn()
        except CheckError as e:
            self.fail(name, str(e))
        except Exception as e:  # a bug in the check or a crash of the client
            self.fail(name, f"{type(e).__name__}: {e}")
        else:
            self.ok(name)

    def ok(self, name):
        self.passed += 1
        print(f"PASS {name}", flush=True)

    def fail(self, name, reason):
        self.failed += 1
        reason = reason.replace("\n", " ")
        print(f"FAIL {name}: {reason}", flush=True)

    def summary(self):
        """Prints the closing line and returns the suite's exit status."""
        print(f"{self.passed} passed, {self.failed} failed", flush=True)
        return 0 if self.failed == 0 else 1


def substitute(lines, rules):
    """Applies every (compiled pattern, replacement) of rules, in order, to each line."""
    out = []
    for line in lines:
        for pattern, repl in rules:
            line = pattern.sub(repl, line)
        out.append(line)
    return out


def get_before(q, deadline):
    """Returns the next item of q, or raises queue.Empty at deadline (time.monotonic())."""
    return q.get(timeout=max(deadline - time.monotonic(), 0.001))


def _kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


class Interactive:
    """One client shell process fed commands on stdin.

    stdout and stderr are merged; a subclass sets up what its _read needs
    and then calls this constructor, which starts a thread running _read to
    consume self.proc.stdout.
    """

    def __init__(self, argv, name, tool, env=None):
        self.name = name
        self.tool = tool
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            env=env, start_new_session=True, text=True, bufsize=1)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        raise NotImplementedError

    def send(self, line):
        """Sends a line without waiting for anything."""
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise CheckError(f"{self.name}: {self.tool} is gone ({e})")

    def close(self):
        """Sends quit, reaps the process (killed after 10 s) and returns its exit status."""
        if self.proc.poll() is None:
            try:
                self.send("quit")
            except CheckError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
        self.reader.join(timeout=5)
        return self.proc.returncode

    def kill(self):
        if self.proc.poll() is None:
            _kill_group(self.proc)
            self.proc.wait(timeout=10)


def run_once(argv, timeout, what, env=None):
    """Runs argv to completion (stdin empty, stderr merged) and returns (exit status, output lines).

    The process group is killed and CheckError raised if it runs past timeout.
    """
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, env=env, start_new_session=True, text=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(p)
        p.communicate()
        raise CheckError(f"{what} did not exit within {timeout} s")
    return p.returncode, out.splitlines()


def two_session_main(argv, prefix, new_session, checks):
    """The main program of a suite run as `suite.py host:port`.

    Opens two sessions (new_session(addr, name)), runs the (name, fn) pairs
    that checks(addr, a, b, base) yields under the base path prefix-<ms>,
    closes both sessions and returns the exit status.
    """
    if len(argv) != 2:
        print("usage: suite.py host:port", file=sys.stderr)
        return 2
    addr = argv[1]
    base = prefix + format(int(time.time() * 1000), "x")
    report = Report(deadline=SUITE_DEADLINE)
    a = new_session(addr, "session A")
    b = new_session(addr, "session B")
    try:
        for name, fn in checks(addr, a, b, base):
            report.check(name, fn)
    finally:
        a.close()
        b.close()
    return report.summary()
