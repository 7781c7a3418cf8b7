#!/usr/bin/python3
"""kazoo 2.8 over TLS: a suite for a server's secure client port.

Usage: /usr/bin/python3 suite.py HOST:PORT   (the secure client port)

Environment: ZKTLS_DIR holds the PEM files tls_test.go writes (ca.pem,
client-*.pem, other-*.pem, bad-*.pem, badca.pem); ZKTLS_CLIENT_DN and
ZKTLS_OTHER_DN are the x509 ids of the client and other certificates. The
server requires client certificates (ssl.clientAuth=need) and has the x509
authentication provider.

Prints one "PASS <check>" or "FAIL <check>: <reason>" line per check and
ends with "N passed, M failed"; exits 0 only if M == 0. Every wait is
bounded; a watchdog ends the process if the suite overruns.
"""

import os
import socket
import ssl
import struct
import sys
import threading
import uuid

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))

from kazoo.client import KazooClient  # noqa: E402
from kazoo.exceptions import NoAuthError  # noqa: E402
from kazoo.protocol.states import KazooState  # noqa: E402
from kazoo.security import ACL, Id, Permissions  # noqa: E402
from suitekit import CheckError, Report, expect  # noqa: E402

SUITE_BUDGET = 80.0
CONNECT_TIMEOUT = 10.0
REFUSED_TIMEOUT = 4.0  # how long a refused client may try before giving up

DIR = os.environ.get("ZKTLS_DIR", "")
CLIENT_DN = os.environ.get("ZKTLS_CLIENT_DN", "")
OTHER_DN = os.environ.get("ZKTLS_OTHER_DN", "")
ROOT = "/tls-kazoo-" + uuid.uuid4().hex[:12]


def path(name):
    return os.path.join(DIR, name)


def client(addr, who="client", ca="ca.pem"):
    """A kazoo client over TLS presenting who's certificate (None: none)."""
    kw = dict(use_ssl=True, ca=path(ca), verify_certs=True)
    if who is not None:
        kw.update(certfile=path(who + "-cert.pem"), keyfile=path(who + "-key.pem"))
    return KazooClient(hosts=addr, timeout=10.0, connection_retry=dict(max_tries=0), **kw)


def connected(addr, who="client"):
    zk = client(addr, who)
    zk.start(timeout=CONNECT_TIMEOUT)
    return zk


def stop(zk):
    try:
        zk.stop()
        zk.close()
    except Exception:
        pass


def expect_refused(zk):
    """zk.start must fail within REFUSED_TIMEOUT and leave no session."""
    try:
        zk.start(timeout=REFUSED_TIMEOUT)
    except Exception:
        expect(zk.connected, False, "connected after a failed start")
        return
    finally:
        stop(zk)
    raise CheckError("the session was established")


def raw_tls(addr, who, ca="ca.pem"):
    """A TLS socket as kazoo would open one; raises on a refused handshake."""
    host, port = addr.rsplit(":", 1)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.load_verify_locations(path(ca))
    if who is not None:
        ctx.load_cert_chain(path(who + "-cert.pem"), path(who + "-key.pem"))
    sock = socket.create_connection((host, int(port)), timeout=5)
    try:
        return ctx.wrap_socket(sock)
    except Exception:
        sock.close()
        raise


def connect_frame():
    # ConnectRequest: protocolVersion, lastZxidSeen, timeOut, sessionId, passwd
    body = struct.pack(">iqiqi", 0, 0, 30000, 0, 16) + b"\0" * 16
    return struct.pack(">i", len(body)) + body


def read_exactly(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError("connection closed")
        buf += chunk
    return buf


def session_over(sock):
    """Sends a ConnectRequest and returns the session id of the answer."""
    sock.sendall(connect_frame())
    (n,) = struct.unpack(">i", read_exactly(sock, 4))
    body = read_exactly(sock, n)
    return struct.unpack(">iiq", body[:16])[2]


def refused_at_handshake(addr, who, ca="ca.pem"):
    """The handshake (or, in TLS 1.3, the first read after it) must fail."""
    try:
        s = raw_tls(addr, who, ca)
    except (ssl.SSLError, ConnectionError, OSError):
        return
    try:
        s.settimeout(5)
        sid = session_over(s)
    except (ssl.SSLError, ConnectionError, EOFError, OSError):
        return
    finally:
        s.close()
    raise CheckError(f"the server opened session {sid:#x}")


def checks(addr):
    def connect_and_roundtrip():
        zk = connected(addr)
        try:
            expect(zk.state, KazooState.CONNECTED, "state")
            zk.create(ROOT, b"tls-root")
            data, stat = zk.get(ROOT)
            expect(data, b"tls-root", "data read back")
            zk.set(ROOT, b"v2")
            expect(zk.get(ROOT)[0], b"v2", "data after set")
            expect(zk.get(ROOT)[1].version, 1, "version after set")
        finally:
            stop(zk)
    yield "connect over TLS with a trusted certificate, create, get, set", connect_and_roundtrip

    def protocol_is_tls12():
        s = raw_tls(addr, "client")
        try:
            expect(s.version(), "TLSv1.2", "negotiated protocol (ZooKeeper's default ssl.protocol)")
            s.settimeout(5)
            if session_over(s) == 0:
                raise CheckError("no session id")
        finally:
            s.close()
    yield "the default protocol is TLSv1.2 and the wire protocol runs over it", protocol_is_tls12

    def x509_acl_own():
        zk = connected(addr)
        try:
            node = ROOT + "/x509-own"
            zk.create(node, b"mine", acl=[ACL(Permissions.ALL, Id("x509", CLIENT_DN))])
            expect(zk.get(node)[0], b"mine", "read under an x509 ACL naming our DN")
            acl, _ = zk.get_acls(node)
            expect([(a.perms, a.id.scheme, a.id.id) for a in acl], [(31, "x509", CLIENT_DN)], "stored ACL")
        finally:
            stop(zk)
    yield "an x509 ACL naming the certificate's DN grants access", x509_acl_own

    def x509_acl_other():
        node = ROOT + "/x509-other"
        owner = connected(addr)
        try:
            owner.create(node, b"mine", acl=[ACL(Permissions.ALL, Id("x509", CLIENT_DN))])
        finally:
            stop(owner)
        other = connected(addr, "other")
        try:
            try:
                other.get(node)
            except NoAuthError:
                return
            raise CheckError("a client with another DN read the node")
        finally:
            stop(other)
    yield "an x509 ACL refuses a certificate with another DN", x509_acl_other

    def auth_acl_expands_to_x509():
        zk = connected(addr)
        try:
            node = ROOT + "/x509-auth"
            zk.create(node, b"", acl=[ACL(Permissions.ALL, Id("auth", ""))])
            acl, _ = zk.get_acls(node)
            ids = sorted((a.id.scheme, a.id.id) for a in acl)
            expect(ids, [("x509", CLIENT_DN)], "ACL after auth expansion")
        finally:
            stop(zk)
    yield "the auth ACL scheme expands to the x509 id", auth_acl_expands_to_x509

    yield "a certificate from an untrusted CA is refused at the handshake", \
        lambda: refused_at_handshake(addr, "bad")
    yield "a client without a certificate is refused (clientAuth=need)", \
        lambda: refused_at_handshake(addr, None)
    yield "kazoo with an untrusted certificate fails to start and gets no session", \
        lambda: expect_refused(client(addr, "bad"))

    def client_rejects_unknown_server():
        try:
            s = raw_tls(addr, "client", ca="badca.pem")
        except ssl.SSLCertVerificationError:
            return
        s.close()
        raise CheckError("the server's certificate verified against an unrelated CA")
    yield "a client trusting another CA rejects the server's certificate", client_rejects_unknown_server

    def plaintext_refused():
        host, port = addr.rsplit(":", 1)
        s = socket.create_connection((host, int(port)), timeout=5)
        try:
            s.sendall(connect_frame())
            try:
                data = s.recv(4096)
            except (ConnectionError, socket.timeout, OSError):
                return
            if len(data) >= 20 and data[:4] == struct.pack(">i", 36):
                raise CheckError("a plaintext ConnectRequest got a ConnectResponse")
        finally:
            s.close()
    yield "a plaintext client on the secure port gets no session", plaintext_refused

    def still_serving():
        zk = connected(addr)
        try:
            expect(zk.get(ROOT)[0], b"v2", "data read after the refused clients")
            zk.delete(ROOT, recursive=True)
            expect(zk.exists(ROOT), None, "root after delete")
        finally:
            stop(zk)
    yield "the server keeps serving trusted clients after refusing others", still_serving


def main(argv):
    if len(argv) != 2:
        print("usage: suite.py host:port", file=sys.stderr)
        return 2
    if not DIR or not CLIENT_DN or not OTHER_DN:
        print("ZKTLS_DIR, ZKTLS_CLIENT_DN and ZKTLS_OTHER_DN must be set", file=sys.stderr)
        return 2
    watchdog = threading.Timer(SUITE_BUDGET + 5, lambda: os._exit(3))
    watchdog.daemon = True
    watchdog.start()
    report = Report(deadline=SUITE_BUDGET)
    for name, fn in checks(argv[1]):
        report.check(name, fn)
    return report.summary()


if __name__ == "__main__":
    code = main(sys.argv)
    sys.stdout.flush()
    os._exit(code)
