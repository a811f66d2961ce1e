package bench

// The cmd/local-up child processes of the through-kube-apiserver run:
// start, wait for the kubeconfig line, stop.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/freshcache/watchcache/freeport"
)

// localUpProc is a running cmd/local-up.
type localUpProc struct {
	cmd        *exec.Cmd
	etcdURL    string
	kubeconfig string
	exited     chan struct{}
	out        *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startLocalUp runs local-up with one kube-apiserver on a free port and
// waits until it says it is ready.
func startLocalUp(ctx context.Context, binDir, dataDir string, extra []string) (*localUpProc, error) {
	port, err := freeport.Port("127.0.0.1")
	if err != nil {
		return nil, err
	}
	args := []string{
		"--data-dir=" + dataDir,
		"--secure-port=" + strconv.Itoa(port),
		"--kube-apiserver=" + filepath.Join(binDir, "kube-apiserver"),
	}
	external := false
	for _, a := range extra {
		external = external || strings.HasPrefix(a, "--etcd-servers=")
	}
	if !external {
		args = append(args, "--etcd-client-port=0", "--etcd-peer-port=0")
	}
	args = append(args, extra...)
	l := &localUpProc{exited: make(chan struct{}), out: &lockedBuffer{}}
	l.cmd = exec.Command(filepath.Join(binDir, "local-up"), args...)
	l.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	l.cmd.Stderr = l.out
	stdout, err := l.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := l.cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: starting local-up: %w", err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			_, _ = l.out.Write([]byte(line + "\n"))
			if rest, ok := strings.CutPrefix(line, "etcd: "); ok {
				if i := strings.Index(rest, " at "); i >= 0 {
					l.etcdURL = strings.SplitN(strings.TrimSpace(rest[i+4:]), ",", 2)[0]
				}
			}
			if i := strings.Index(line, "export KUBECONFIG="); i >= 0 && l.kubeconfig == "" {
				l.kubeconfig = strings.TrimSpace(strings.SplitN(line[i+len("export KUBECONFIG="):], ";", 2)[0])
			}
			if strings.Contains(line, "Press Ctrl-C to stop.") && !signalled {
				signalled = true
				close(ready)
			}
		}
	}()
	go func() { _ = l.cmd.Wait(); close(l.exited) }()
	select {
	case <-ready:
		return l, nil
	case <-l.exited:
		out := l.out.String()
		if strings.Contains(out, "not available in this build") {
			return nil, fmt.Errorf("%w: %s", ErrImplementationRefused, lastLine(out, "watch-cache-implementation"))
		}
		return nil, fmt.Errorf("bench: local-up exited before it was ready:\n%s", out)
	case <-ctx.Done():
		l.stop()
		return nil, ctx.Err()
	case <-time.After(5 * time.Minute):
		l.stop()
		return nil, fmt.Errorf("bench: local-up not ready within 5m:\n%s", l.out.String())
	}
}

func lastLine(out, containing string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], containing) {
			return strings.TrimSpace(lines[i])
		}
	}
	return lines[len(lines)-1]
}

// stop sends SIGINT (local-up's Ctrl-C) and kills after 90s.
func (l *localUpProc) stop() {
	select {
	case <-l.exited:
		return
	default:
	}
	_ = l.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-l.exited:
	case <-time.After(90 * time.Second):
		_ = l.cmd.Process.Kill()
		<-l.exited
	}
}
