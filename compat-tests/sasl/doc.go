// Package sasl holds the SASL (DIGEST-MD5) compat suites: a Java client
// program (run.sh, src/zksasl) and zkCli.sh one-shot commands
// (zkcli_suite.py), both authenticating through a JAAS client section, run
// against every zktest target configured identically: zoo.cfg with
// authProvider.sasl and superUser=admin, and the JAAS Server section with
// users alice, bob and admin, given to zkraft by the zoo.cfg key
// java.security.auth.login.config and to ZooKeeper by the same
// -Djava.security.auth.login.config system property (SERVER_JVMFLAGS).
// Each target runs twice: open, and with sessionRequireClientSASLAuth=true.
//
// Run: go test ./compat-tests/sasl/ -count=1 -v.
package sasl
