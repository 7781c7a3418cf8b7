// Package tls runs two client suites against the secure client port of
// every test target: the ZooKeeper 3.8 Java client over Netty
// (run.sh, src/zktls) and kazoo 2.8 with use_ssl (suite.py).
//
// The test writes PEM files at run time (a CA, the server's certificate for
// 127.0.0.1, two client certificates with known DNs, and a client
// certificate from a CA nobody trusts) and starts each target with the same
// zoo.cfg keys: secureClientPort, ssl.keyStore.*, ssl.trustStore.*,
// ssl.clientAuth=need, authProvider.x509 and, for Apache,
// serverCnxnFactory=NettyServerCnxnFactory (the Netty jars are added to its
// classpath through ZKTEST_APACHE_CLASSPATH). Both suites check a TLS
// session works end to end, the x509 identity (whoAmI, x509 ACLs, the auth
// scheme), and that untrusted, missing or plaintext clients get no session
// while the server keeps serving the others.
//
// Invariants:
//   - Every target gets its own server; all files live in t.TempDir();
//     everything listens on 127.0.0.1.
//   - Each suite runs under zktest.RunSuite's timeout and passes only with
//     exit status 0 and a last line "N passed, 0 failed", N > 0; the suites
//     bound every wait themselves.
package tls
