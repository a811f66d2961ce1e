package localup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

// ErrExited is wrapped when a kube-apiserver child exits before it is asked to.
var ErrExited = errors.New("localup: kube-apiserver exited")

// APIServer is one supervised kube-apiserver child process.
type APIServer struct {
	// Name identifies the instance in messages, e.g. "kube-apiserver-1".
	Name string
	// URL is the https address clients use.
	URL string
	// LogPath receives the child's stdout and stderr.
	LogPath string

	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
	err  error // set before done is closed
}

// StartAPIServer starts binary with args, logging to logPath.
func StartAPIServer(name, binary, url, logPath string, args []string) (*APIServer, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// If local-up dies without cleaning up, the kernel still stops the child.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("localup: starting %s (%s): %w", name, binary, err)
	}
	s := &APIServer{Name: name, URL: url, LogPath: logPath, cmd: cmd, log: logFile, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		_ = logFile.Close()
		s.err = err
		close(s.done)
	}()
	return s, nil
}

// Pid is the child's process id.
func (s *APIServer) Pid() int { return s.cmd.Process.Pid }

// Done is closed when the child has exited.
func (s *APIServer) Done() <-chan struct{} { return s.done }

// ExitError describes how the child ended; valid after Done is closed.
func (s *APIServer) ExitError() error {
	if s.err == nil {
		return fmt.Errorf("%w: %s ended with status 0", ErrExited, s.Name)
	}
	return fmt.Errorf("%w: %s: %v", ErrExited, s.Name, s.err)
}

// WaitReady polls /readyz with the admin credential until it answers 200,
// the child exits, ctx is done or timeout passes.
func (s *APIServer) WaitReady(ctx context.Context, cfg *rest.Config, timeout time.Duration) error {
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return err
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}, Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	poll := time.NewTicker(250 * time.Millisecond)
	defer poll.Stop()
	var last string
	for {
		if ok, why := readyz(ctx, client, s.URL); ok {
			return nil
		} else {
			last = why
		}
		select {
		case <-s.done:
			return s.ExitError()
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("localup: %s not ready after %s (last answer: %s)", s.Name, timeout, last)
		case <-poll.C:
		}
	}
}

func readyz(ctx context.Context, client *http.Client, base string) (bool, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
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

// Stop sends SIGTERM, which starts kube-apiserver's graceful shutdown, and
// kills the child if it has not exited within grace.
func (s *APIServer) Stop(grace time.Duration) {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-s.done:
	case <-t.C:
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// TailLog returns the last n lines of the child's log, for error messages.
func (s *APIServer) TailLog(n int) string {
	data, err := os.ReadFile(s.LogPath)
	if err != nil {
		return ""
	}
	return string(lastLines(data, n))
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
