package localup

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

// ErrExited is wrapped when a child process (a kube-apiserver, the
// controller-manager, the scheduler or a hollow node) exits before it is
// asked to.
var ErrExited = errors.New("localup: child process exited")

// Process is one supervised child process. Its stdout and stderr go to
// LogPath.
type Process struct {
	// Name identifies the child in messages, e.g. "kube-apiserver-1".
	Name string
	// LogPath receives the child's stdout and stderr.
	LogPath string

	cmd  *exec.Cmd
	done chan struct{}
	// stopped is set by Stop: the exit that follows was asked for.
	stopped atomic.Bool
	err     error // set before done is closed
}

// StartProcess starts binary with args, logging to logPath.
func StartProcess(name, binary, logPath string, args []string) (*Process, error) {
	return startProcess(name, binary, logPath, args, nil, false)
}

// startProcess starts binary with env (nil: local-up's own); ownGroup
// puts it in a process group of its own, out of reach of the terminal's
// Ctrl-C.
func startProcess(name, binary, logPath string, args, env []string, ownGroup bool) (*Process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Env = env
	// If local-up dies without cleaning up, the kernel still stops the child.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: ownGroup}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("localup: starting %s (%s): %w", name, binary, err)
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		_ = logFile.Close()
		p.err = err
		close(p.done)
	}()
	return p, nil
}

// Pid is the child's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the child has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitError describes how the child ended; valid after Done is closed.
func (p *Process) ExitError() error {
	if p.err == nil {
		return fmt.Errorf("%w: %s ended with status 0", ErrExited, p.Name)
	}
	return fmt.Errorf("%w: %s: %v", ErrExited, p.Name, p.err)
}

// WaitHealthy polls url (a /readyz or /healthz) until it answers 200, the
// child exits, ctx is done or timeout passes.
func (p *Process) WaitHealthy(ctx context.Context, tlsCfg *tls.Config, url string, timeout time.Duration) error {
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}, Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	return p.waitFor(ctx, timeout, func() (bool, string) { return getOK(ctx, client, url) })
}

// waitFor polls cond every 250 ms until it holds, the child exits, ctx is
// done or timeout passes. The error quotes cond's last answer.
func (p *Process) waitFor(ctx context.Context, timeout time.Duration, cond func() (bool, string)) error {
	return pollUntil(ctx, timeout, p.done, func(struct{}) error { return p.ExitError() }, cond, func(last string) error {
		return fmt.Errorf("localup: %s not ready after %s (last answer: %s)", p.Name, timeout, last)
	})
}

// pollUntil calls cond every 250 ms until it holds (nil). It gives up when
// exited delivers (exitErr's error), ctx is done (ctx.Err()) or timeout
// passes (timedOut's error, given cond's last answer).
func pollUntil[T any](ctx context.Context, timeout time.Duration, exited <-chan T, exitErr func(T) error,
	cond func() (bool, string), timedOut func(last string) error) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	poll := time.NewTicker(250 * time.Millisecond)
	defer poll.Stop()
	var last string
	for {
		ok, why := cond()
		if ok {
			return nil
		}
		last = why
		select {
		case v := <-exited:
			return exitErr(v)
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return timedOut(last)
		case <-poll.C:
		}
	}
}

func getOK(ctx context.Context, client *http.Client, url string) (bool, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err.Error()
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode == http.StatusOK, fmt.Sprintf("%d %s", resp.StatusCode, bytes.TrimSpace(lastLines(body, 3)))
}

// Stop sends SIGTERM, which starts a Kubernetes component's graceful
// shutdown, and kills the child if it has not exited within grace.
func (p *Process) Stop(grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	p.stopped.Store(true)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// TailLog returns the last n lines of the child's log, for error messages.
func (p *Process) TailLog(n int) string {
	data, err := os.ReadFile(p.LogPath)
	if err != nil {
		return ""
	}
	return string(lastLines(data, n))
}

// withLog adds the last lines of p's log to err, so a failure says why.
func (p *Process) withLog(err error) error {
	return fmt.Errorf("%w\nlast lines of %s:\n%s", err, p.LogPath, p.TailLog(15))
}

// APIServer is one supervised kube-apiserver child process.
type APIServer struct {
	*Process
	// URL is the https address clients use.
	URL string
}

// StartAPIServer starts binary with args, logging to logPath.
func StartAPIServer(name, binary, url, logPath string, args []string) (*APIServer, error) {
	p, err := StartProcess(name, binary, logPath, args)
	if err != nil {
		return nil, err
	}
	return &APIServer{Process: p, URL: url}, nil
}

// WaitReady polls /readyz with the admin credential until it answers 200,
// the child exits, ctx is done or timeout passes.
func (s *APIServer) WaitReady(ctx context.Context, cfg *rest.Config, timeout time.Duration) error {
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return err
	}
	return s.WaitHealthy(ctx, tlsCfg, s.URL+"/readyz", timeout)
}

func lastLines(data []byte, n int) []byte {
	data = bytes.TrimRight(data, "\n")
	idx := len(data)
	for i := 0; i < n && idx > 0; i++ {
		j := bytes.LastIndexByte(data[:idx], '\n')
		if j < 0 {
			return data
		}
		idx = j
	}
	if idx == 0 {
		return data
	}
	return data[idx+1:]
}

func lookPath(name string) (string, error) { return exec.LookPath(name) }
