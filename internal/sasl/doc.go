// Package sasl is the server side of ZooKeeper's SASL authentication as
// zkraft speaks it: the DIGEST-MD5 mechanism (RFC 2831) with ZooKeeper's
// protocol "zookeeper" and realm "zk-sasl-md5", and the JAAS login
// configuration file its users come from (the "Server" section's
// user_<name>="<password>" options).
//
// Invariants:
//   - A DigestMD5Server is one connection's exchange: it is used by one
//     goroutine, completes at most once, and after an error or completion
//     refuses every further token.
//   - The identity of a completed exchange is the authentication user name,
//     as ZooKeeper's SaslServerCallbackHandler makes it (authorization ids
//     sent by the client are accepted and ignored).
//   - Nothing here reads a clock; the nonce comes from the reader given to
//     NewDigestMD5Server (crypto/rand in the server).
//
// Not supported: GSSAPI (Kerberos), the integrity and confidentiality
// layers (qop auth-int and auth-conf), reauthentication (subsequent
// authentication, RFC 2831 2.2), and ${property} expansion in JAAS files.
package sasl
