// Package sasl holds the SASL (DIGEST-MD5) compat tests, each run against
// every zktest target configured identically: zoo.cfg with
// authProvider.sasl and superUser=admin, and the JAAS Server section with
// users alice, bob and admin, given to zkraft by the zoo.cfg key
// java.security.auth.login.config and to ZooKeeper by the same
// -Djava.security.auth.login.config system property (SERVER_JVMFLAGS).
// Each target runs open and with sessionRequireClientSASLAuth=true.
//
//   - TestSASLJavaClient: a Java client program (run.sh, src/zksasl) with
//     -Djava.security.auth.login.config naming a JAAS file of client
//     sections (alice, bob, admin, a wrong password, an unknown user).
//   - TestSASLZkCli: zkCli.sh one-shot commands (zkcli_suite.py) with the
//     same file in CLIENT_JVMFLAGS.
//   - TestSASLWire: the exchange and the enforcement on the wire (reply
//     codes, zxids, tokens, null bodies, when the connection closes), with
//     internal/sasl.ClientResponse as the client.
//   - TestSASLEnsemble (zkraft only): on three members, an identity gained
//     on one member travels with its writes; alice writes through both
//     followers, bob is refused through the leader.
//
// Run: go test ./compat-tests/sasl/ -count=1 -v (about a minute).
package sasl
