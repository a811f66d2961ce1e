package e2e

import (
	"context"
	"errors"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/freshcache/freshcache/lab/pkg/localup"
	"github.com/freshcache/freshcache/lab/pkg/localup/launch"
)

// localUp is a running lab/cmd/local-up process (started by lab/pkg/localup/launch).
type localUp struct {
	t           *testing.T
	proc        *launch.Process
	dataDir     string
	kubeconfigs []string
	// ready is local-up's ready file (localup.ReadyFile).
	ready *localup.ReadyFile
}

// startLocalUp runs local-up with extra flags on free ports and waits until
// it writes its ready file. Without extra flags it is a bare control plane
// (etcd and kube-apiserver, as the tests of the cache want); a test that
// wants the controllers or hollow nodes passes --controllers or --nodes,
// which override the defaults. The process is stopped at test cleanup if
// the test did not stop it.
func startLocalUp(t *testing.T, extra ...string) *localUp {
	t.Helper()
	l := &localUp{t: t, dataDir: t.TempDir()}
	for _, a := range extra {
		if v, ok := strings.CutPrefix(a, "--data-dir="); ok {
			l.dataDir = v // the last one wins, as in local-up's own parsing
		}
	}
	p, err := launch.Start(context.Background(), launch.Options{BinDir: binDir, DataDir: l.dataDir, Args: extra})
	if err != nil {
		t.Fatal(err)
	}
	l.proc, l.ready = p, p.Ready
	for _, a := range p.Ready.APIServers {
		l.kubeconfigs = append(l.kubeconfigs, a.Kubeconfig)
	}
	t.Cleanup(func() { _ = l.stop(t) })
	return l
}

func (l *localUp) out() string { return l.proc.Output() }

// stop sends SIGINT, as Ctrl-C does, and returns once local-up has exited.
func (l *localUp) stop(t *testing.T) error {
	err := l.proc.Stop(90 * time.Second)
	if errors.Is(err, launch.ErrKilled) {
		t.Errorf("local-up did not stop within 90s of SIGINT:\n%s", l.out())
	}
	return err
}

func (l *localUp) restConfig(t *testing.T, i int) *rest.Config {
	t.Helper()
	if i >= len(l.kubeconfigs) {
		t.Fatalf("local-up's ready file lists %d kubeconfigs, want at least %d", len(l.kubeconfigs), i+1)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", l.kubeconfigs[i])
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func (l *localUp) client(t *testing.T, i int) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(l.restConfig(t, i))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// portOf returns the secure port local-up's first apiserver serves on (the
// launcher lets local-up pick it), so a restart can reuse it and old
// kubeconfigs stay valid.
func portOf(t *testing.T, l *localUp) string {
	t.Helper()
	u, err := url.Parse(l.ready.APIServers[0].URL)
	if err != nil || u.Port() == "" {
		t.Fatalf("the ready file's apiserver URL %q names no port (%v)", l.ready.APIServers[0].URL, err)
	}
	return u.Port()
}

// kubectl runs the built kubectl against kubeconfig i.
func (l *localUp) kubectl(t *testing.T, i int, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kc := l.kubeconfigs[i]
	cmd := exec.CommandContext(ctx, bin("kubectl"), append([]string{"--kubeconfig=" + kc}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
