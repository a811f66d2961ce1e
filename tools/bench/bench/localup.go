package bench

// The cmd/local-up child processes of the through-kube-apiserver run:
// start, wait for the ready file, stop.

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

	"github.com/freshcache/freshcache/pkg/localup"
	"github.com/freshcache/watchcache/freeport"
)

// localUpProc is a running cmd/local-up.
type localUpProc struct {
	cmd        *exec.Cmd
	etcdURL    string
	kubeconfig string
	ready      *localup.ReadyFile
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

// startLocalUp runs local-up with one kube-apiserver on a free port, and no
// controllers or nodes (their traffic would only blur the comparison of the
// caches), and waits until it writes its ready file.
func startLocalUp(ctx context.Context, binDir, dataDir string, extra []string) (*localUpProc, error) {
	port, err := freeport.Port("127.0.0.1")
	if err != nil {
		return nil, err
	}
	args := []string{
		"--data-dir=" + dataDir,
		"--secure-port=" + strconv.Itoa(port),
		"--kube-apiserver=" + filepath.Join(binDir, "kube-apiserver"),
		"--nodes=0",
		"--controllers=false",
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
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			_, _ = l.out.Write([]byte(sc.Text() + "\n"))
		}
	}()
	go func() { _ = l.cmd.Wait(); close(l.exited) }()
	readyPath := localup.ReadyFilePath(dataDir)
	deadline := time.NewTimer(5 * time.Minute)
	defer deadline.Stop()
	poll := time.NewTicker(100 * time.Millisecond)
	defer poll.Stop()
	for {
		// A file left by an earlier run on the same directory names another pid.
		if f, err := localup.ReadReadyFile(readyPath); err == nil && f.PID == l.cmd.Process.Pid {
			l.kubeconfig = f.Kubeconfig
			l.ready = f
			if len(f.Etcd.Endpoints) > 0 {
				l.etcdURL = f.Etcd.Endpoints[0]
			}
			return l, nil
		}
		select {
		case <-l.exited:
			out := l.out.String()
			if strings.Contains(out, "not available in this build") {
				return nil, fmt.Errorf("%w: %s", ErrImplementationRefused, lastLine(out, "watch-cache-implementation"))
			}
			return nil, fmt.Errorf("bench: local-up exited before it was ready:\n%s", out)
		case <-ctx.Done():
			l.stop()
			return nil, ctx.Err()
		case <-deadline.C:
			l.stop()
			return nil, fmt.Errorf("bench: local-up not ready within 5m:\n%s", l.out.String())
		case <-poll.C:
		}
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
