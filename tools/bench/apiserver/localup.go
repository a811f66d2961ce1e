package apiserver

// The lab/cmd/local-up child processes of the benchmark, started through
// lab/pkg/localup/launch.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/freshcache/freshcache/lab/pkg/localup"
	"github.com/freshcache/freshcache/lab/pkg/localup/launch"
)

// localUpProc is a running lab/cmd/local-up.
type localUpProc struct {
	proc       *launch.Process
	etcdURL    string
	kubeconfig string
	ready      *localup.ReadyFile
}

// startLocalUp runs local-up with one kube-apiserver on a free port, and no
// controllers or nodes unless extra asks for them (their traffic would
// only blur the comparison of the caches), and waits for its ready file.
func startLocalUp(ctx context.Context, binDir, dataDir string, extra []string) (*localUpProc, error) {
	p, err := launch.Start(ctx, launch.Options{BinDir: binDir, DataDir: dataDir, Args: extra})
	if errors.Is(err, launch.ErrExited) && strings.Contains(err.Error(), "not available in this build") {
		return nil, fmt.Errorf("%w: %s", errImplementationRefused, lastLine(err.Error(), "watch-cache-implementation"))
	}
	if err != nil {
		return nil, fmt.Errorf("apiserver: %w", err)
	}
	l := &localUpProc{proc: p, kubeconfig: p.Ready.Kubeconfig, ready: p.Ready}
	if len(p.Ready.Etcd.Endpoints) > 0 {
		l.etcdURL = p.Ready.Etcd.Endpoints[0]
	}
	return l, nil
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
func (l *localUpProc) stop() { _ = l.proc.Stop(0) }
