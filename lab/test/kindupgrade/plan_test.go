package kindupgrade

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestPlan(t *testing.T) {
	steps := Plan(3)
	var got []string
	for _, s := range steps {
		got = append(got, s.Phase+":"+string(rune('1'+s.Target))+":"+s.To)
	}
	want := []string{
		"restart:1:upstream", "restart:2:upstream", "restart:3:upstream",
		"upgrade:1:freshcache", "upgrade:2:freshcache", "upgrade:3:freshcache",
		"rollback:1:upstream", "rollback:2:upstream", "rollback:3:upstream",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("plan %v, want %v", got, want)
	}
	for k, want := range map[int]string{0: "u u u", 3: "u u u", 4: "f u u", 6: "f f f", 8: "u u f", 9: "u u u"} {
		var short []string
		for _, c := range Caches(3, steps, k) {
			short = append(short, c[:1])
		}
		if got := strings.Join(short, " "); got != want {
			t.Errorf("after %d steps: %s, want %s", k, got, want)
		}
	}
}

// A manifest as kubeadm writes it, with kind-up's flags.
const manifest = `apiVersion: v1
kind: Pod
spec:
  containers:
  - command:
    - kube-apiserver
    - --advertise-address=172.18.0.3
    - --feature-gates=
    - --watch-cache-implementation=upstream
    - --etcd-servers=https://127.0.0.1:2379
    image: freshcache.local/kube-apiserver:v1.37.2-freshcache
`

// TestEditCommand runs the edit with the host's sh and sed on a copy of
// the manifest, step after step, as the kubelet's file would see them.
func TestEditCommand(t *testing.T) {
	if _, err := exec.LookPath("sed"); err != nil {
		t.Skip("no sed here")
	}
	path := filepath.Join(t.TempDir(), "kube-apiserver.yaml")
	if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	edit := func(cache string, gen int) string {
		t.Helper()
		cmd, err := EditCommand(path, cache, gen)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s %d: %v: %s", cache, gen, err, out)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	prev := manifest
	for gen, cache := range []string{Upstream, Freshcache, Upstream} {
		got := edit(cache, gen+1)
		if got == prev {
			t.Errorf("step %d left the manifest as it was: the kubelet would not restart the pod", gen+1)
		}
		want := strings.Replace(manifest, "    - --watch-cache-implementation=upstream\n",
			"    - --watch-cache-implementation="+cache+"\n    - --vmodule=freshcacheupgrade="+string(rune('1'+gen))+"\n", 1)
		if got != want {
			t.Errorf("step %d:\n%s\nwant\n%s", gen+1, got, want)
		}
		prev = got
	}
	if _, err := EditCommand(path, "etcd", 1); err == nil {
		t.Error("an unknown cache was accepted")
	}
	// A manifest without the flag is refused, not left alone silently.
	if err := os.WriteFile(path, []byte(strings.Replace(manifest, "    - --watch-cache-implementation=upstream\n", "", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, _ := EditCommand(path, Freshcache, 1)
	if err := exec.Command(cmd[0], cmd[1:]...).Run(); err == nil {
		t.Error("a manifest without --watch-cache-implementation was edited without an error")
	}
}
