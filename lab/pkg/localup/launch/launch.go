package launch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/freshcache/freshcache/lab/pkg/localup"
)

// DefaultReadyTimeout bounds the wait for the ready file.
const DefaultReadyTimeout = 5 * time.Minute

// ErrExited is wrapped when local-up exits before it is ready.
var ErrExited = errors.New("launch: local-up exited before it was ready")

// Options says how to start local-up.
type Options struct {
	// BinDir holds local-up and kube-apiserver (make build's _output/bin).
	BinDir string
	// DataDir is local-up's --data-dir.
	DataDir string
	// Args are more local-up flags; they override the defaults.
	Args []string
	// ReadyTimeout: zero means DefaultReadyTimeout.
	ReadyTimeout time.Duration
}

// Process is a running local-up.
type Process struct {
	// Ready is local-up's ready file of this run.
	Ready *localup.ReadyFile
	// Args are the flags local-up was started with.
	Args []string

	cmd    *exec.Cmd
	out    output
	exited chan struct{}
	err    error // set before exited is closed
}

type output struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// Start runs local-up and returns once its ready file names this process,
// or with an error (local-up exited, ctx is done, or ReadyTimeout passed;
// then nothing is left running).
func Start(ctx context.Context, o Options) (*Process, error) {
	args := []string{
		"--data-dir=" + o.DataDir,
		// local-up picks the port; the ready file's URLs name it.
		"--secure-port=0",
		"--kube-apiserver=" + filepath.Join(o.BinDir, "kube-apiserver"),
		"--nodes=0",
		"--controllers=false",
	}
	external := false
	for _, a := range o.Args {
		external = external || strings.HasPrefix(a, "--etcd-servers=")
	}
	if !external {
		args = append(args, "--etcd-client-port=0", "--etcd-peer-port=0")
	}
	args = append(args, o.Args...)
	dataDir := o.DataDir
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--data-dir="); ok {
			dataDir = v // the last one wins, as in local-up's parsing
		}
	}
	p := &Process{Args: args, exited: make(chan struct{})}
	p.cmd = exec.Command(filepath.Join(o.BinDir, "local-up"), args...)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("launch: starting local-up: %w", err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.exited) }()

	timeout := o.ReadyTimeout
	if timeout == 0 {
		timeout = DefaultReadyTimeout
	}
	path := localup.ReadyFilePath(dataDir)
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	poll := time.NewTicker(100 * time.Millisecond)
	defer poll.Stop()
	for {
		// A file left by an earlier run on the same directory names
		// another pid.
		if f, err := localup.ReadReadyFile(path); err == nil && f.PID == p.cmd.Process.Pid {
			p.Ready = f
			return p, nil
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("%w (%v):\n%s", ErrExited, p.err, p.out.String())
		case <-ctx.Done():
			_ = p.Stop(0)
			return nil, ctx.Err()
		case <-deadline.C:
			_ = p.Stop(0)
			return nil, fmt.Errorf("launch: local-up wrote no ready file %s within %v:\n%s", path, timeout, p.out.String())
		case <-poll.C:
		}
	}
}

// Output is everything local-up printed so far.
func (p *Process) Output() string { return p.out.String() }

// Exited is closed once local-up has exited; Err then says how.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Err is local-up's exit error, once Exited is closed.
func (p *Process) Err() error {
	select {
	case <-p.exited:
		return p.err
	default:
		return nil
	}
}

// ErrKilled is returned by Stop when local-up outlived its grace period.
var ErrKilled = errors.New("launch: local-up did not stop in time and was killed")

// Stop sends SIGINT (local-up's Ctrl-C), waits up to grace (zero: 90 s)
// and kills it after that. It returns local-up's exit error, or ErrKilled.
func (p *Process) Stop(grace time.Duration) error {
	select {
	case <-p.exited:
		return p.err
	default:
	}
	if grace == 0 {
		grace = 90 * time.Second
	}
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.exited:
		return p.err
	case <-t.C:
		_ = p.cmd.Process.Kill()
		<-p.exited
		return ErrKilled
	}
}
