package kindlb

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeHAProxy is an haproxy for the Supervisor's tests: `-c -q -f F`
// refuses F when it has a server on port 1 (standing for a configuration
// haproxy rejects); `-W -db -f F` logs "start", then "reload" with F's
// server lines on each SIGUSR2, and "stop" on SIGTERM, to $LOG.
const fakeHAProxy = `#!/bin/sh
if [ "$1" = -c ]; then
  if grep -q ':1 ' "$4"; then echo "refused" >&2; exit 1; fi
  exit 0
fi
cfg=$4
echo start >>"$LOG"
trap 'echo "reload $(grep -c "^    server " "$cfg")" >>"$LOG"' USR2
trap 'echo stop >>"$LOG"; exit 0' TERM
while :; do sleep 0.01; done
`

func TestSupervisorReloadsOnChange(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "haproxy")
	if err := os.WriteFile(bin, []byte(fakeHAProxy), 0o755); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "log")
	t.Setenv("LOG", logPath)
	lds, cds := filepath.Join(dir, "lds.yaml"), filepath.Join(dir, "cds.yaml")
	s := &Supervisor{LDS: lds, CDS: cds, Config: filepath.Join(dir, "haproxy.cfg"), HAProxy: bin, Poll: 10 * time.Millisecond, Log: io.Discard}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()

	logged := func() string {
		b, _ := os.ReadFile(logPath)
		return string(b)
	}
	waitLog := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(logged(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("haproxy log %q, want %q", logged(), want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// No files yet (kind writes them later): started on the health proxy.
	waitLog("start\n")
	if cfg, _ := os.ReadFile(s.Config); strings.Contains(string(cfg), "frontend") {
		t.Fatalf("a frontend before kind configured one:\n%s", cfg)
	}
	// kind configures two control planes, renaming the files into place.
	writeAtomic(t, lds, kindLDS)
	writeAtomic(t, cds, kindCDS)
	waitLog("reload 2\n")
	// A configuration haproxy refuses is not applied: no reload, and the
	// file on disk is still the last valid one.
	writeAtomic(t, cds, strings.Replace(kindCDS, "port_value: 6443\n", "port_value: 1\n", 1))
	time.Sleep(100 * time.Millisecond) // ten polls
	if n := strings.Count(logged(), "reload"); n != 1 {
		t.Fatalf("%d reloads after a refused configuration, want still 1: %q", n, logged())
	}
	if cfg, _ := os.ReadFile(s.Config); strings.Contains(string(cfg), ":1 ") {
		t.Fatalf("the refused configuration was written:\n%s", cfg)
	}
	// A third control plane is applied.
	three := strings.Replace(kindCDS, "    - lb_endpoints:\n", "    - lb_endpoints:\n      - endpoint:\n          address:\n            socket_address:\n              address: ha-control-plane3\n              port_value: 6443\n", 1)
	writeAtomic(t, cds, three)
	waitLog("reload 3\n")
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
	waitLog("stop\n")
}

// writeAtomic replaces path's content by renaming a new file over it, as
// kind does: a plain write would let a 10 ms poll read a half-written
// file (seen under load: an empty cluster list applied as "reload 0").
func writeAtomic(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// A first configuration that is not valid fails Run at once: kind's loop
// then starts it again a second later.
func TestSupervisorRefusesABadFirstConfiguration(t *testing.T) {
	dir := t.TempDir()
	lds := filepath.Join(dir, "lds.yaml")
	if err := os.WriteFile(lds, []byte("resources: ["), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &Supervisor{LDS: lds, CDS: filepath.Join(dir, "cds.yaml"), Config: filepath.Join(dir, "haproxy.cfg"), HAProxy: "/nonexistent", Poll: time.Second, Log: io.Discard}
	if err := s.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "listeners") {
		t.Fatalf("Run = %v, want the listener file's error", err)
	}
}
