package e2e

import (
	"bufio"
	"context"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/freshcache/freshcache/pkg/localup"
	"github.com/freshcache/watchcache/freeport"
)

// localUp is a running cmd/local-up process.
type localUp struct {
	t           *testing.T
	cmd         *exec.Cmd
	dataDir     string
	kubeconfigs []string
	// ready is local-up's ready file (localup.ReadyFile), read once it
	// appeared.
	ready *localup.ReadyFile

	mu     sync.Mutex
	output strings.Builder // everything local-up printed
	exited chan struct{}
	err    error // set before exited is closed
}

// startLocalUp runs local-up with extra flags on free ports and waits until
// it writes its ready file. Without extra flags it is a bare control plane
// (etcd and kube-apiserver, as the tests of the cache want); a test that
// wants the controllers or hollow nodes passes --controllers or --nodes,
// which override the defaults here. The process is stopped at test cleanup
// if the test did not stop it.
func startLocalUp(t *testing.T, extra ...string) *localUp {
	t.Helper()
	port, err := freeport.Port("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{
		"--data-dir=" + t.TempDir(),
		"--etcd-client-port=0",
		"--etcd-peer-port=0",
		"--secure-port=" + strconv.Itoa(port),
		"--kube-apiserver=" + bin("kube-apiserver"),
		"--nodes=0",
		"--controllers=false",
	}, extra...)
	l := &localUp{t: t, exited: make(chan struct{})}
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--data-dir="); ok {
			l.dataDir = v // the last one wins, as in local-up's own parsing
		}
	}
	l.cmd = exec.Command(bin("local-up"), args...)
	stdout, err := l.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	l.cmd.Stderr = &lockedWriter{l}
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go l.scan(stdout)
	go func() {
		err := l.cmd.Wait()
		l.mu.Lock()
		l.err = err
		l.mu.Unlock()
		close(l.exited)
	}()
	t.Cleanup(func() { _ = l.stop(t) })

	// The ready file appears once everything is up. A file from an earlier
	// run on the same --data-dir names another pid.
	path := localup.ReadyFilePath(l.dataDir)
	deadline := time.NewTimer(5 * time.Minute)
	defer deadline.Stop()
	poll := time.NewTicker(100 * time.Millisecond)
	defer poll.Stop()
	for {
		if f, err := localup.ReadReadyFile(path); err == nil && f.PID == l.cmd.Process.Pid {
			l.ready = f
			for _, a := range f.APIServers {
				l.kubeconfigs = append(l.kubeconfigs, a.Kubeconfig)
			}
			return l
		}
		select {
		case <-l.exited:
			t.Fatalf("local-up exited before it was ready: %v\n%s", l.err, l.out())
		case <-deadline.C:
			t.Fatalf("local-up wrote no ready file %s within 5m:\n%s", path, l.out())
		case <-poll.C:
		}
	}
}

type lockedWriter struct{ l *localUp }

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.l.mu.Lock()
	defer w.l.mu.Unlock()
	return w.l.output.Write(p)
}

func (l *localUp) scan(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		l.mu.Lock()
		l.output.WriteString(sc.Text() + "\n")
		l.mu.Unlock()
	}
}

func (l *localUp) out() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.output.String()
}

// stop sends SIGINT, as Ctrl-C does, and returns once local-up has exited.
func (l *localUp) stop(t *testing.T) error {
	select {
	case <-l.exited:
		return l.err
	default:
	}
	_ = l.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-l.exited:
		return l.err
	case <-time.After(90 * time.Second):
		_ = l.cmd.Process.Kill()
		<-l.exited
		t.Errorf("local-up did not stop within 90s of SIGINT:\n%s", l.out())
		return l.err
	}
}

func (l *localUp) restConfig(t *testing.T, i int) *rest.Config {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
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

// portOf returns the secure port local-up was started with, so a restart
// can reuse it and old kubeconfigs stay valid.
func portOf(t *testing.T, l *localUp) string {
	t.Helper()
	for _, a := range l.cmd.Args {
		if v, ok := strings.CutPrefix(a, "--secure-port="); ok {
			return v
		}
	}
	t.Fatal("local-up was started without --secure-port")
	return ""
}

// kubectl runs the built kubectl against kubeconfig i.
func (l *localUp) kubectl(t *testing.T, i int, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l.mu.Lock()
	kc := l.kubeconfigs[i]
	l.mu.Unlock()
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
