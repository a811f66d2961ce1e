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

	"github.com/freshcache/watchcache/freeport"
)

// localUp is a running cmd/local-up process.
type localUp struct {
	t           *testing.T
	cmd         *exec.Cmd
	dataDir     string
	kubeconfigs []string

	mu     sync.Mutex
	output strings.Builder // everything local-up printed
	exited chan struct{}
	err    error // set before exited is closed
}

// startLocalUp runs local-up with extra flags on free ports and waits until
// it prints the kubeconfig lines. The process is stopped at test cleanup if
// the test did not stop it.
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
	}, extra...)
	l := &localUp{t: t, dataDir: args[0][len("--data-dir="):], exited: make(chan struct{})}
	l.cmd = exec.Command(bin("local-up"), args...)
	stdout, err := l.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	l.cmd.Stderr = &lockedWriter{l}
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	go l.scan(stdout, ready)
	go func() {
		err := l.cmd.Wait()
		l.mu.Lock()
		l.err = err
		l.mu.Unlock()
		close(l.exited)
	}()
	t.Cleanup(func() { _ = l.stop(t) })

	deadline := time.NewTimer(4 * time.Minute)
	defer deadline.Stop()
	select {
	case <-ready:
		return l
	case <-l.exited:
		t.Fatalf("local-up exited before it was ready: %v\n%s", l.err, l.out())
	case <-deadline.C:
		t.Fatalf("local-up not ready within 4m:\n%s", l.out())
	}
	return nil
}

type lockedWriter struct{ l *localUp }

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.l.mu.Lock()
	defer w.l.mu.Unlock()
	return w.l.output.Write(p)
}

func (l *localUp) scan(r io.Reader, ready chan struct{}) {
	sc := bufio.NewScanner(r)
	signalled := false
	for sc.Scan() {
		line := sc.Text()
		l.mu.Lock()
		l.output.WriteString(line + "\n")
		if i := strings.Index(line, "export KUBECONFIG="); i >= 0 {
			path := strings.TrimPrefix(line[i:], "export KUBECONFIG=")
			path = strings.TrimSpace(strings.SplitN(path, ";", 2)[0])
			l.kubeconfigs = append(l.kubeconfigs, path)
		}
		if strings.Contains(line, "Press Ctrl-C to stop.") && !signalled {
			signalled = true
			close(ready)
		}
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
		t.Fatalf("local-up printed %d kubeconfigs, want at least %d", len(l.kubeconfigs), i+1)
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
