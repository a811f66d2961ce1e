package kindlb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"syscall"
	"time"

	"sigs.k8s.io/yaml"
)

// Bootstrap returns the paths of the listener and cluster files that an
// envoy bootstrap file (kind's /home/envoy/envoy.yaml) names.
func Bootstrap(data []byte) (lds, cds string, err error) {
	var b struct {
		DynamicResources struct {
			CDS struct {
				PathConfigSource struct {
					Path string `json:"path"`
				} `json:"path_config_source"`
			} `json:"cds_config"`
			LDS struct {
				PathConfigSource struct {
					Path string `json:"path"`
				} `json:"path_config_source"`
			} `json:"lds_config"`
		} `json:"dynamic_resources"`
	}
	if err := yaml.Unmarshal(data, &b); err != nil {
		return "", "", fmt.Errorf("%w: bootstrap: %v", ErrConfig, err)
	}
	lds, cds = b.DynamicResources.LDS.PathConfigSource.Path, b.DynamicResources.CDS.PathConfigSource.Path
	if lds == "" || cds == "" {
		return "", "", fmt.Errorf("%w: bootstrap names no listener or cluster file", ErrConfig)
	}
	return lds, cds, nil
}

// Supervisor runs haproxy on what kind's files say, and reloads it when
// they change. Its fields are set before Run and not changed after.
type Supervisor struct {
	// LDS and CDS are kind's listener and cluster files; a missing one is
	// empty.
	LDS, CDS string
	// Config is where the haproxy configuration is written.
	Config string
	// HAProxy is the haproxy binary.
	HAProxy string
	// Poll is how often the files are read again.
	Poll time.Duration
	// Log receives one line per configuration applied or refused, and
	// haproxy's own output.
	Log io.Writer
}

// Run starts haproxy and keeps it on kind's configuration until ctx ends
// (it then stops haproxy and returns nil) or haproxy exits (its error).
// The first configuration must be valid; a later invalid one is logged
// and the running haproxy keeps the last valid one.
func (s *Supervisor) Run(ctx context.Context) error {
	applied, err := s.render()
	if err != nil {
		return err
	}
	if err := s.write(applied); err != nil {
		return err
	}
	cmd := exec.Command(s.HAProxy, "-W", "-db", "-f", s.Config)
	cmd.Stdout, cmd.Stderr = s.Log, s.Log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("kindlb: start haproxy: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tick := time.NewTicker(s.Poll)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			return fmt.Errorf("kindlb: haproxy exited: %v", err)
		case <-ctx.Done():
			_ = cmd.Process.Signal(syscall.SIGTERM)
			// The stop was asked for: haproxy's exit status is only logged.
			if err := <-exited; err != nil {
				fmt.Fprintf(s.Log, "kind-lb: haproxy stopped: %v\n", err)
			}
			return nil
		case <-tick.C:
		}
		next, err := s.render()
		if err != nil {
			fmt.Fprintf(s.Log, "kind-lb: keeping the running configuration: %v\n", err)
			continue
		}
		if next == applied {
			continue
		}
		if err := s.write(next); err != nil {
			fmt.Fprintf(s.Log, "kind-lb: keeping the running configuration: %v\n", err)
			continue
		}
		applied = next
		// The master process re-reads the file and replaces its workers;
		// connections in flight finish on the old ones.
		if err := cmd.Process.Signal(syscall.SIGUSR2); err != nil {
			return fmt.Errorf("kindlb: reload haproxy: %w", err)
		}
		fmt.Fprintf(s.Log, "kind-lb: reloaded haproxy\n")
	}
}

// render reads kind's files and renders them.
func (s *Supervisor) render() (string, error) {
	lds, err := readOrEmpty(s.LDS)
	if err != nil {
		return "", err
	}
	cds, err := readOrEmpty(s.CDS)
	if err != nil {
		return "", err
	}
	c, err := Parse(lds, cds)
	if err != nil {
		return "", err
	}
	return Render(c), nil
}

// write checks cfg with haproxy -c and only then puts it at s.Config.
func (s *Supervisor) write(cfg string) error {
	tmp := s.Config + ".new"
	if err := os.WriteFile(tmp, []byte(cfg), 0o644); err != nil {
		return fmt.Errorf("kindlb: %w", err)
	}
	if out, err := exec.Command(s.HAProxy, "-c", "-q", "-f", tmp).CombinedOutput(); err != nil {
		return fmt.Errorf("kindlb: haproxy refused the configuration: %v: %s", err, bytes.TrimSpace(out))
	}
	if err := os.Rename(tmp, s.Config); err != nil {
		return fmt.Errorf("kindlb: %w", err)
	}
	fmt.Fprintf(s.Log, "kind-lb: configuration written to %s\n", s.Config)
	return nil
}

func readOrEmpty(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("kindlb: %w", err)
	}
	return b, nil
}
