package sasl_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/zkraft/zkraft/internal/zktest"
)

// suiteTimeout bounds one run of a suite (javac included).
const suiteTimeout = 120 * time.Second

// python is Debian's interpreter; the zkCli suite needs only its standard library.
const python = "/usr/bin/python3"

const serverJAAS = `Server {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_alice="alice-secret"
    user_bob="bob-secret"
    user_admin="admin-secret";
};
`

// clientJAAS has one section per client identity the suites use; Client is
// the default section of ZooKeeper's client.
const clientJAAS = `Client {
    org.apache.zookeeper.server.auth.DigestLoginModule required username="alice" password="alice-secret";
};
BobClient {
    org.apache.zookeeper.server.auth.DigestLoginModule required username="bob" password="bob-secret";
};
AdminClient {
    org.apache.zookeeper.server.auth.DigestLoginModule required username="admin" password="admin-secret";
};
WrongPassword {
    org.apache.zookeeper.server.auth.DigestLoginModule required username="alice" password="not-alice-secret";
};
UnknownUser {
    org.apache.zookeeper.server.auth.DigestLoginModule required username="mallory" password="x";
};
`

// TestSASLJavaClient runs the Java client suite (run.sh) against every
// target, open and with sessionRequireClientSASLAuth=true.
func TestSASLJavaClient(t *testing.T) {
	script, err := filepath.Abs("run.sh")
	if err != nil {
		t.Fatal(err)
	}
	runSuites(t, func(mode string) []string { return []string{script} })
}

// TestSASLZkCli runs the zkCli.sh suite (zkcli_suite.py) against every
// target, open and with sessionRequireClientSASLAuth=true.
func TestSASLZkCli(t *testing.T) {
	script, err := filepath.Abs("zkcli_suite.py")
	if err != nil {
		t.Fatal(err)
	}
	runSuites(t, func(mode string) []string { return []string{python, "-u", script} })
}

// runSuites starts each target in each mode and runs the suite command
// (followed by the server address and the mode) against it.
func runSuites(t *testing.T, argv func(mode string) []string) {
	serverFile, clientFile := writeJAAS(t)
	env := []string{"ZKSASL_CLIENT_JAAS=" + clientFile, "PYTHONDONTWRITEBYTECODE=1"}
	for _, target := range zktest.Targets() {
		for _, mode := range []string{"open", "enforced"} {
			t.Run(string(target)+"/"+mode, func(t *testing.T) {
				srv := startServer(t, target, serverFile, mode == "enforced")
				zktest.RunSuite(t, suiteTimeout, env, append(argv(mode), srv.Addr, mode)...)
			})
		}
	}
}

// writeJAAS writes the server and client JAAS files into a temporary
// directory and returns their paths.
func writeJAAS(t *testing.T) (serverFile, clientFile string) {
	t.Helper()
	dir := t.TempDir()
	serverFile, clientFile = filepath.Join(dir, "server.jaas"), filepath.Join(dir, "client.jaas")
	for p, text := range map[string]string{serverFile: serverJAAS, clientFile: clientJAAS} {
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return serverFile, clientFile
}

// startServer starts target with the same zoo.cfg lines for both: the sasl
// provider, the JAAS file (zkraft reads the zoo.cfg key, ZooKeeper the
// -Djava.security.auth.login.config flag zktest adds for it), admin as
// super user, and with enforced sessionRequireClientSASLAuth=true.
func startServer(t *testing.T, target zktest.Target, serverFile string, enforced bool) *zktest.Server {
	t.Helper()
	extra := map[string]string{
		"authProvider.sasl":               "org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
		"java.security.auth.login.config": serverFile,
		"superUser":                       "admin",
	}
	if enforced {
		extra["sessionRequireClientSASLAuth"] = "true"
	}
	return zktest.Start(t, target, zktest.Options{Extra: extra})
}
