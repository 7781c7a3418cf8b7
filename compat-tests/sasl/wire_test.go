package sasl_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/zkraft/zkraft/internal/sasl"
	"github.com/zkraft/zkraft/internal/zktest"
	"github.com/zkraft/zkraft/jute"
)

// nullBuffer is a jute buffer of length -1: the null token ZooKeeper sends
// with a failed SASL reply.
var nullBuffer = []byte{0xff, 0xff, 0xff, 0xff}

// saslStep sends one SASL token and returns the reply's header and body.
func saslStep(t *testing.T, c *zktest.RawConn, token []byte) (jute.ReplyHeader, []byte) {
	t.Helper()
	xid := c.NextXid()
	if err := c.Send(xid, jute.OpSASL, &jute.BufferRecord{Token: token}); err != nil {
		t.Fatal(err)
	}
	c.SetTimeout(10 * time.Second)
	for {
		hdr, body, err := c.Recv()
		if err != nil {
			t.Fatalf("sasl reply to xid %d: %v", xid, err)
		}
		if hdr.Xid == xid {
			return hdr, body
		}
	}
}

// challenge starts an exchange and checks the server's challenge.
func challenge(t *testing.T, c *zktest.RawConn) []byte {
	t.Helper()
	hdr, body := saslStep(t, c, []byte{})
	var tok jute.BufferRecord
	if hdr.Err != 0 || hdr.Zxid != 0 || jute.Unmarshal(body, &tok) != nil {
		t.Fatalf("challenge reply %+v %x", hdr, body)
	}
	d, err := sasl.ParseDirectives(string(tok.Token))
	if err != nil || len(d) != 4 || d["realm"] != sasl.Realm || d["charset"] != "utf-8" ||
		d["algorithm"] != "md5-sess" || len(d["nonce"]) != 40 {
		t.Fatalf("challenge %q: %v", tok.Token, err)
	}
	return tok.Token
}

// expectRefusal checks a failed request's reply: the code, zxid 0, the
// body, then the close of the connection.
func expectRefusal(t *testing.T, c *zktest.RawConn, hdr jute.ReplyHeader, body []byte, code int32, wantBody []byte) {
	t.Helper()
	if hdr.Err != code || hdr.Zxid != 0 || !bytes.Equal(body, wantBody) {
		t.Fatalf("reply %+v body %x; want err %d zxid 0 body %x", hdr, body, code, wantBody)
	}
	if err := c.ExpectClosed(5 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestSASLWire checks the SASL exchange and the enforcement at the wire
// level, the same expectations for every target: reply codes, zxids,
// tokens, null bodies and when the connection closes.
func TestSASLWire(t *testing.T) {
	serverFile, _ := writeJAAS(t)
	for _, target := range zktest.Targets() {
		t.Run(string(target), func(t *testing.T) {
			for _, enforced := range []bool{false, true} {
				srv := startServer(t, target, serverFile, enforced)
				failCode := jute.ErrAuthFailed
				if enforced {
					failCode = jute.ErrSessionClosedRequireAuth
				}
				dial := func(t *testing.T) *zktest.RawConn {
					c, resp := zktest.DialRaw(t, srv.Addr, 0, nil, 10000, true)
					if resp.SessionID == 0 {
						t.Fatal("no session")
					}
					return c
				}
				name := map[bool]string{false: "open", true: "enforced"}[enforced]
				t.Run(name+"/alice authenticates and creates a sasl ACL node", func(t *testing.T) {
					c := dial(t)
					tok, rspauth, err := sasl.ClientResponse(challenge(t, c), "alice", "alice-secret", "Y25vbmNl")
					if err != nil {
						t.Fatal(err)
					}
					hdr, body := saslStep(t, c, tok)
					var out jute.BufferRecord
					if hdr.Err != 0 || hdr.Zxid != 0 || jute.Unmarshal(body, &out) != nil || string(out.Token) != "rspauth="+rspauth {
						t.Fatalf("final reply %+v %q", hdr, body)
					}
					path := "/wire-" + name
					acl := []jute.ACL{{Perms: jute.PermAll, ID: jute.Id{Scheme: "sasl", ID: "alice"}}}
					hdr, err = c.Call(jute.OpCreate, &jute.CreateRequest{Path: path, ACL: acl}, &jute.CreateResponse{})
					if err != nil || hdr.Err != 0 {
						t.Fatalf("create: %+v %v", hdr, err)
					}
					if hdr, err := c.Call(jute.OpGetData, &jute.PathWatchRequest{Path: path}, nil); err != nil || hdr.Err != 0 {
						t.Fatalf("alice getData: %+v %v", hdr, err)
					}
					// A further token after completion fails the exchange.
					hdr, body = saslStep(t, c, []byte{})
					expectRefusal(t, c, hdr, body, failCode, nullBuffer)

					// Another authenticated user has no access.
					b := dial(t)
					tok, _, _ = sasl.ClientResponse(challenge(t, b), "bob", "bob-secret", "Y25vbmNl")
					if hdr, _ := saslStep(t, b, tok); hdr.Err != 0 {
						t.Fatalf("bob: %+v", hdr)
					}
					if hdr, err := b.Call(jute.OpGetData, &jute.PathWatchRequest{Path: path}, nil); err != nil || hdr.Err != jute.ErrNoAuth {
						t.Fatalf("bob getData: %+v %v", hdr, err)
					}
				})
				for _, bad := range []struct {
					name, user, password string
				}{{"wrong password", "alice", "nope"}, {"unknown user", "mallory", "x"}} {
					t.Run(name+"/"+bad.name, func(t *testing.T) {
						c := dial(t)
						tok, _, _ := sasl.ClientResponse(challenge(t, c), bad.user, bad.password, "Y25vbmNl")
						hdr, body := saslStep(t, c, tok)
						expectRefusal(t, c, hdr, body, failCode, nullBuffer)
					})
				}
				t.Run(name+"/initial response ignored", func(t *testing.T) {
					c := dial(t)
					hdr, body := saslStep(t, c, []byte(`username="alice"`))
					var tok jute.BufferRecord
					if hdr.Err != 0 || jute.Unmarshal(body, &tok) != nil || !bytes.Contains(tok.Token, []byte("nonce=")) {
						t.Fatalf("reply %+v %q", hdr, body)
					}
				})
				t.Run(name+"/null token closes the connection", func(t *testing.T) {
					c := dial(t)
					if err := c.Send(c.NextXid(), jute.OpSASL, &jute.BufferRecord{}); err != nil {
						t.Fatal(err)
					}
					if err := c.ExpectClosed(5 * time.Second); err != nil {
						t.Fatal(err)
					}
				})
				t.Run(name+"/garbage response refused", func(t *testing.T) {
					c := dial(t)
					challenge(t, c)
					hdr, body := saslStep(t, c, []byte(strings.Repeat("x", 100)))
					expectRefusal(t, c, hdr, body, failCode, nullBuffer)
				})
				t.Run(name+"/unauthenticated requests", func(t *testing.T) {
					c := dial(t)
					xid := c.NextXid()
					hdr, err := c.Call(jute.OpExists, &jute.PathWatchRequest{Path: "/"}, nil)
					if err != nil {
						t.Fatal(err)
					}
					if !enforced {
						if hdr.Err != 0 {
							t.Fatalf("exists: %+v", hdr)
						}
						return
					}
					if hdr.Xid != xid {
						t.Fatalf("xid %d; want %d", hdr.Xid, xid)
					}
					expectRefusal(t, c, hdr, nil, jute.ErrSessionClosedRequireAuth, nil)
				})
				if enforced {
					t.Run(name+"/unauthenticated ping", func(t *testing.T) {
						c := dial(t)
						if err := c.Send(jute.XidPing, jute.OpPing, nil); err != nil {
							t.Fatal(err)
						}
						c.SetTimeout(5 * time.Second)
						hdr, body, err := c.Recv()
						if err != nil || hdr.Xid != jute.XidPing {
							t.Fatalf("ping reply %+v %v", hdr, err)
						}
						expectRefusal(t, c, hdr, body, jute.ErrSessionClosedRequireAuth, nil)
					})
				}
			}
		})
	}
}

// TestSASLWithoutLogin: a server without a JAAS file answers a SASL token
// Ok with a null token, and closes the connection on a null token, as
// ZooKeeper 3.8 does (it fails on the null before looking for a login).
func TestSASLWithoutLogin(t *testing.T) {
	for _, target := range zktest.Targets() {
		t.Run(string(target), func(t *testing.T) {
			srv := zktest.Start(t, target, zktest.Options{})
			c, _ := zktest.DialRaw(t, srv.Addr, 0, nil, 10000, true)
			hdr, body := saslStep(t, c, []byte("hello"))
			if hdr.Err != 0 || hdr.Zxid != 0 || !bytes.Equal(body, nullBuffer) {
				t.Fatalf("reply %+v body %x; want Ok, zxid 0, null token", hdr, body)
			}
			if err := c.Send(c.NextXid(), jute.OpSASL, &jute.BufferRecord{}); err != nil {
				t.Fatal(err)
			}
			if err := c.ExpectClosed(5 * time.Second); err != nil {
				t.Fatal(err)
			}
		})
	}
}
