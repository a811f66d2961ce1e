package stall

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// etcdProc is the etcd under test, a child process that SIGSTOP stalls.
type etcdProc struct {
	cmd      *exec.Cmd
	endpoint string
	exited   chan struct{}
	err      error // set before exited is closed

	// mu orders the signals of pause, resume and stop.
	mu sync.Mutex
}

// etcdStartTimeout bounds the wait for the child's endpoint line.
const etcdStartTimeout = 2 * time.Minute

// startEtcd runs argv with --data-dir=dataDir, its standard error going
// to logPath, and returns once it printed its client URL.
func startEtcd(ctx context.Context, argv []string, dataDir, logPath string) (*etcdProc, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("stall: etcd log: %w", err)
	}
	defer func() { _ = log.Close() }() // the child holds its own descriptor
	args := append(append([]string(nil), argv[1:]...), "--data-dir="+dataDir)
	cmd := exec.Command(argv[0], args...)
	// SIGKILL, not SIGTERM: a stopped process only acts on a SIGTERM once
	// continued, and the run may die while etcd is stopped.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = log
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("stall: starting etcd %v: %w", argv, err)
	}
	e := &etcdProc{cmd: cmd, exited: make(chan struct{})}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- strings.TrimSpace(sc.Text())
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() { e.err = cmd.Wait(); close(e.exited) }()
	t := time.NewTimer(etcdStartTimeout)
	defer t.Stop()
	select {
	case line := <-lines:
		if !strings.HasPrefix(line, "http://") && !strings.HasPrefix(line, "https://") {
			_ = e.stop()
			return nil, fmt.Errorf("stall: etcd printed %q, not its client URL (log %s)", line, logPath)
		}
		e.endpoint = line
		return e, nil
	case <-e.exited:
		return nil, fmt.Errorf("stall: etcd exited before serving (%v); log %s", e.err, logPath)
	case <-t.C:
		_ = e.stop()
		return nil, fmt.Errorf("stall: etcd printed no client URL within %v; log %s", etcdStartTimeout, logPath)
	case <-ctx.Done():
		_ = e.stop()
		return nil, ctx.Err()
	}
}

func (e *etcdProc) pid() int { return e.cmd.Process.Pid }

// pause stops the process (SIGSTOP): its sockets stay open and nothing
// answers, as in a long defrag or a stuck disk.
func (e *etcdProc) pause() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("stall: SIGSTOP etcd: %w", err)
	}
	return nil
}

// resume continues it (SIGCONT).
func (e *etcdProc) resume() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.cmd.Process.Signal(syscall.SIGCONT); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stall: SIGCONT etcd: %w", err)
	}
	return nil
}

// stop resumes the process if it is stopped, sends SIGINT and kills it
// after 30 s.
func (e *etcdProc) stop() error {
	_ = e.resume()
	select {
	case <-e.exited:
		return nil
	default:
	}
	_ = e.cmd.Process.Signal(syscall.SIGINT)
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	select {
	case <-e.exited:
		return nil
	case <-t.C:
		_ = e.cmd.Process.Kill()
		<-e.exited
		return errors.New("stall: etcd did not stop within 30 s of SIGINT and was killed")
	}
}
