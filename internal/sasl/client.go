package sasl

import (
	"errors"
	"fmt"
)

// ClientResponse answers a DIGEST-MD5 challenge as ZooKeeper's Java client
// does (qop auth, charset utf-8, digest-uri zookeeper/zk-sasl-md5, the
// challenge's first realm). It returns the response token and the rspauth
// value a server that knows the password sends back. For tests and tools:
// zkraft's server never calls it.
func ClientResponse(challenge []byte, user, password, cnonce string) (token []byte, rspauth string, err error) {
	d, err := ParseDirectives(string(challenge))
	if err != nil {
		return nil, "", fmt.Errorf("challenge: %w", err)
	}
	if d["nonce"] == "" {
		return nil, "", errors.New("challenge: no nonce")
	}
	p := digestParams{user: user, realm: d["realm"], password: password, nonce: d["nonce"], cnonce: cnonce,
		nc: "00000001", qop: "auth", uri: Protocol + "/" + Realm}
	q := func(s string) string { return `"` + s + `"` }
	resp := "charset=utf-8,username=" + q(user) + ",realm=" + q(p.realm) + ",nonce=" + q(p.nonce) +
		",nc=00000001,cnonce=" + q(cnonce) + ",digest-uri=" + q(p.uri) + ",maxbuf=65536,response=" +
		p.response("AUTHENTICATE") + ",qop=auth"
	return []byte(resp), p.response(""), nil
}
