package zktest

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
)

func TestTargets(t *testing.T) {
	tests := []struct {
		env  string
		want []Target
	}{
		{"", []Target{Zkraft, Apache}},
		{"apache", []Target{Apache}},
		{" zkraft , Apache,", []Target{Zkraft, Apache}},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			t.Setenv(TargetsEnv, tt.env)
			if got := Targets(); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Targets() with %q = %v; want %v", tt.env, got, tt.want)
			}
		})
	}
}

func TestDigestACLHash(t *testing.T) {
	// The pair quoted in ZooKeeper's administrator guide and many setups.
	if got, want := DigestACLHash("super:admin"), "super:xQJmxLMiHGwaqBvst5y6rkB6HQs="; got != want {
		t.Fatalf("DigestACLHash = %q; want %q", got, want)
	}
}

func TestZooCfg(t *testing.T) {
	opts := Options{TickMs: 300, ContainerCheckIntervalMs: 500, SuperDigest: "super:x=", Extra: map[string]string{"maxClientCnxns": "0"}}
	cfg := string(opts.zooCfg(Zkraft, "/d", 1234))
	for _, line := range []string{"tickTime=300", "dataDir=/d", "clientPort=1234", "clientPortAddress=127.0.0.1",
		"admin.enableServer=false", "4lw.commands.whitelist=*", "extendedTypesEnabled=true", "maxClientCnxns=0",
		"znode.container.checkIntervalMs=500", "DigestAuthenticationProvider.superDigest=super:x="} {
		if !slices.Contains(strings.Split(cfg, "\n"), line) {
			t.Errorf("zoo.cfg lacks %q:\n%s", line, cfg)
		}
	}
	if apache := string(opts.zooCfg(Apache, "/d", 1234)); strings.Contains(apache, "superDigest") {
		t.Errorf("apache zoo.cfg has superDigest:\n%s", apache)
	}
	want := []string{"-Dznode.container.checkIntervalMs=500", "-Dzookeeper.DigestAuthenticationProvider.superDigest=super:x="}
	if got := opts.javaProps(); !reflect.DeepEqual(got, want) {
		t.Errorf("javaProps() = %v; want %v", got, want)
	}
	jaas := Options{Extra: map[string]string{"java.security.auth.login.config": "/j.conf"}}
	if got, want := jaas.javaProps(), []string{"-Djava.security.auth.login.config=/j.conf"}; !reflect.DeepEqual(got, want) {
		t.Errorf("javaProps() with a JAAS file = %v; want %v", got, want)
	}
}

// TestLifecycle starts each target, talks to it, kills and restarts it.
func TestLifecycle(t *testing.T) {
	for _, target := range Targets() {
		t.Run(string(target), func(t *testing.T) {
			s := Start(t, target, Options{})
			out, err := s.FourLetter("srvr")
			if err != nil || !strings.Contains(out, "Mode: standalone") {
				t.Fatalf("srvr = %q, %v", out, err)
			}
			c, _ := s.Connect(t)
			if _, err := c.Create("/lifecycle", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatalf("create: %v", err)
			}
			s.Kill()
			if s.Running() {
				t.Fatal("running after Kill")
			}
			s.Restart(t)
			if !s.Running() {
				t.Fatal("not running after Restart")
			}
			c2, _ := s.Connect(t)
			if data, _, err := c2.Get("/lifecycle"); err != nil || string(data) != "x" {
				t.Fatalf("get after restart = %q, %v; want x", data, err)
			}
			s.Stop()
			if s.Running() {
				t.Fatal("running after Stop")
			}
		})
	}
}
