package cluster

// The configurations, the run's settings, and the order of its cells.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Cluster configurations: which watch cache the apiservers run.
const (
	Upstream = "upstream"
	// Freshcache is freshcache with FreshResourceVersionZero turned off:
	// rv=0 keeps upstream's meaning. The name predates the gate's move to
	// on by default, and the committed reports use it.
	Freshcache = "freshcache"
	// FreshRV0 is freshcache with FreshResourceVersionZero (its default):
	// rv=0 reads are fresh within the staleness bound too.
	FreshRV0 = "freshcache-fresh-rv0"
)

// AllConfigs in report order.
var AllConfigs = []string{Upstream, Freshcache, FreshRV0}

// clusterArgs are the kube-apiserver flags (through local-up) of a
// configuration.
func clusterArgs(config string) []string {
	switch config {
	case Upstream:
		return []string{"--watch-cache-implementation=upstream"}
	case Freshcache:
		return []string{"--watch-cache-implementation=freshcache", "--feature-gates=FreshResourceVersionZero=false"}
	case FreshRV0:
		return []string{"--watch-cache-implementation=freshcache", "--feature-gates=FreshResourceVersionZero=true"}
	}
	return nil
}

// clusterImpl is the --watch-cache-implementation behind a configuration
// (which says what freshness metrics it exports).
func clusterImpl(config string) string {
	if config == Upstream {
		return Upstream
	}
	return Freshcache
}

// Node kinds (Config.NodeKind).
const (
	// NodesHollow are kubemark hollow nodes: a whole kubelet each, on a
	// fake runtime (about 17 MB and a few millicores per node).
	NodesHollow = "hollow"
	// NodesKwok are kwok nodes: one kwok controller keeps them Ready and
	// runs their pods' lifecycle (local-up --kwok-nodes); the kubelets'
	// pod watches are the informer children's (Config.NodeWatches).
	NodesKwok = "kwok"
)

// Modes of a run.
const (
	modeSingle = "single" // one kube-apiserver, one etcd member
	modeHA     = "ha"     // two kube-apiservers, three etcd members
)

// Config is one `freshcache-bench cluster` run. Every duration and
// rate is the same for every configuration, and so is the seed, so every
// configuration gets the same churn schedule and the same read sequence.
type Config struct {
	// BinDir holds local-up and what it runs (make build).
	BinDir string
	// Self is the freshcache-bench binary, run again as the informer
	// children.
	Self    string
	Configs []string
	// NodeKind is NodesHollow (empty means that) or NodesKwok.
	NodeKind string `json:"node_kind,omitempty"`
	// Nodes are the node counts of the single-apiserver sweep.
	Nodes []int
	// HANodes is the node count of the HA runs; 0 runs none.
	HANodes int
	// PodsPerNode sizes the Deployments (PodsPerNode*N pods in all), in
	// Deployments of ReplicasPerDeployment.
	PodsPerNode           int
	ReplicasPerDeployment int
	// PodRate is the churn: pods created plus deleted per second.
	PodRate float64
	// NodeListRate and AllListRate are LISTs per second of each rv (""
	// and 0): of one node's pods (spec.nodeName), and of every pod.
	NodeListRate, AllListRate float64
	// Informers is the number of pod informers (half with WatchListClient
	// on), each restarted every InformerRestart during the warm-up and
	// the window.
	Informers       int
	InformerRestart time.Duration
	// NodeWatches adds one pod watch per node, on the pods bound to it
	// (spec.nodeName), as each node's kubelet has, half of them with
	// WatchListClient on; they never restart but in the storm. With kwok
	// nodes they stand in for the kubelets' own.
	NodeWatches bool `json:"node_watches,omitempty"`
	// Storm restarts every node watch at once after the window (needs
	// NodeWatches) and measures until all have synced, within
	// StormTimeout.
	Storm        bool          `json:"storm,omitempty"`
	StormTimeout time.Duration `json:"storm_timeout,omitempty"`
	// ControllerQPS, when positive, is local-up's
	// --controller-kube-api-qps: thousands of pods roll out at this pace.
	ControllerQPS float64 `json:"controller_qps,omitempty"`
	// ProbeRate is freshness-probe writes per second (each read back four
	// ways).
	ProbeRate float64
	Seed      uint64
	// Repeats runs every cell this many times (at least 1), interleaved:
	// each node count's configurations in turn, then again. On 2 cores one
	// cell's CPU and LIST p99 move by more than the targets' margins from
	// run to run; the ratios are then the median over repeats.
	Repeats int
	// Warmup runs the churn before the window; Window is measured.
	Warmup, Window time.Duration
	// CalibWindow is the length of the idle window and of each per-kind
	// calibration window after it, at CalibRate reads per second
	// (CalibListAllRate for LISTs of every pod).
	CalibWindow                 time.Duration
	CalibRate, CalibListAllRate float64
	// ReadyTimeout bounds local-up's start and the Deployments' rollout.
	ReadyTimeout time.Duration
	// SetupInflightPods paces the rollout before the warm-up: Deployments
	// are created while at most this many of their pods are not yet
	// Running (0: all at once).
	SetupInflightPods int
	// CPUProfile takes one CPU profile of every kube-apiserver over the
	// measured window, writes it into the cell's data directory and
	// stores its split by part in Row.APICPUParts (profile.go): when a
	// target is missed, the report shows where the apiservers' CPU went.
	CPUProfile bool `json:"cpu_profile,omitempty"`
	// LocalUpArgs are passed to every cluster's local-up after the
	// configuration's own flags (e.g. --consistent-read-timeout-action).
	LocalUpArgs []string
	DataDir     string
	// RemovePassedCells removes a cell's data directory once the cell has
	// run, keeping only those of failed cells (their component logs say
	// why).
	RemovePassedCells bool      `json:"-"`
	Progress          io.Writer `json:"-"`
}

// Validate checks the configuration; errors name the flag at fault.
func (c Config) Validate() error {
	var errs []error
	if len(c.Configs) == 0 {
		errs = append(errs, errors.New("--configs: at least one configuration is needed"))
	}
	for _, n := range c.Configs {
		if !slices.Contains(AllConfigs, n) {
			errs = append(errs, fmt.Errorf("--configs: unknown configuration %q (known: %s)", n, strings.Join(AllConfigs, ", ")))
		}
	}
	if len(c.Nodes) == 0 && c.HANodes == 0 {
		errs = append(errs, errors.New("--nodes: at least one node count is needed (or --ha-nodes)"))
	}
	for _, n := range c.Nodes {
		if n < 1 {
			errs = append(errs, fmt.Errorf("--nodes: %d nodes; each count must be at least 1", n))
		}
	}
	if c.NodeKind != "" && c.NodeKind != NodesHollow && c.NodeKind != NodesKwok {
		errs = append(errs, fmt.Errorf("--node-kind: %q; use %s or %s", c.NodeKind, NodesHollow, NodesKwok))
	}
	if c.Storm && !c.NodeWatches {
		errs = append(errs, errors.New("--storm restarts the node watches: it needs --node-watches"))
	}
	if c.Storm && c.StormTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--storm-timeout: %v; must be more than 0", c.StormTimeout))
	}
	if c.ControllerQPS < 0 {
		errs = append(errs, fmt.Errorf("--controller-qps: %v; must not be negative", c.ControllerQPS))
	}
	if c.HANodes < 0 {
		errs = append(errs, fmt.Errorf("--ha-nodes: %d hollow nodes; must be 0 (no HA runs) or more", c.HANodes))
	}
	positive := []struct {
		flag string
		v    float64
	}{
		{"--repeat", float64(c.Repeats)}, {"--pods-per-node", float64(c.PodsPerNode)}, {"--replicas-per-deployment", float64(c.ReplicasPerDeployment)},
		{"--window", c.Window.Seconds()}, {"--calibration-window", c.CalibWindow.Seconds()},
		{"--calibration-rate", c.CalibRate}, {"--calibration-list-all-rate", c.CalibListAllRate},
	}
	for _, p := range positive {
		if p.v <= 0 {
			errs = append(errs, fmt.Errorf("%s: %v; must be more than 0", p.flag, p.v))
		}
	}
	nonNegative := []struct {
		flag string
		v    float64
	}{
		{"--pod-rate", c.PodRate}, {"--node-list-rate", c.NodeListRate}, {"--all-list-rate", c.AllListRate},
		{"--informers", float64(c.Informers)}, {"--probe-rate", c.ProbeRate}, {"--warmup", c.Warmup.Seconds()},
		{"--informer-restart", c.InformerRestart.Seconds()}, {"--setup-inflight-pods", float64(c.SetupInflightPods)},
	}
	for _, p := range nonNegative {
		if p.v < 0 {
			errs = append(errs, fmt.Errorf("%s: %v; must not be negative", p.flag, p.v))
		}
	}
	return errors.Join(errs...)
}

// cell is one cluster: a configuration at a node count in a mode, and
// which repeat of it (1 to Repeats; 0 when the run does not repeat).
type cell struct {
	config, mode string
	nodes        int
	repeat       int
}

// cells lists the runs in order: for each node count every configuration
// in turn (so a noisy minute on the shared machine hits neighbours of the
// same N, not one configuration), then the HA runs. With repeats, each
// node count's round of configurations runs Repeats times, the order
// rotated by one each round so that no configuration always runs first.
func (c Config) cells() []cell {
	rounds := max(c.Repeats, 1)
	round := func(mode string, n int) []cell {
		var out []cell
		for r := range rounds {
			for i := range c.Configs {
				cf := c.Configs[(i+r)%len(c.Configs)]
				rep := r + 1
				if rounds == 1 {
					rep = 0
				}
				out = append(out, cell{cf, mode, n, rep})
			}
		}
		return out
	}
	var out []cell
	for _, n := range c.Nodes {
		out = append(out, round(modeSingle, n)...)
	}
	if c.HANodes > 0 {
		out = append(out, round(modeHA, c.HANodes)...)
	}
	return out
}

// name is how progress lines and errors call c.
func (c cell) name() string {
	s := fmt.Sprintf("%s %s at %d nodes", c.config, c.mode, c.nodes)
	if c.repeat > 0 {
		s += fmt.Sprintf(", repeat %d", c.repeat)
	}
	return s
}

// Run runs every cell and returns the rows it measured. A cell that
// fails is reported and the run goes on (a long sweep should not lose its
// other cells to one of them); the error then names every failed cell.
// When ctx is done it stops at once.
func Run(ctx context.Context, cfg Config) ([]Row, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	var (
		rows []Row
		errs []error
	)
	cells := cfg.cells()
	for i, c := range cells {
		fmt.Fprintf(cfg.Progress, "# [%d/%d] %s\n", i+1, len(cells), c.name())
		began := time.Now()
		row, err := runCell(ctx, cfg, c)
		if ctx.Err() != nil {
			return rows, errors.Join(append(errs, ctx.Err())...)
		}
		if err != nil {
			err = fmt.Errorf("cluster: %s: %w (logs in %s)", c.name(), err, filepath.Join(cellDir(cfg.DataDir, c), "logs"))
			fmt.Fprintf(cfg.Progress, "# failed: %v\n", err)
			errs = append(errs, err)
			continue
		}
		if cfg.RemovePassedCells {
			if err := os.RemoveAll(cellDir(cfg.DataDir, c)); err != nil {
				fmt.Fprintf(cfg.Progress, "# %v\n", err)
			}
		}
		row.WallSeconds = time.Since(began).Seconds()
		fmt.Fprintf(cfg.Progress, "# %s\n", row.summary())
		rows = append(rows, row)
	}
	return rows, errors.Join(errs...)
}

// localUpArgs are local-up's flags for c.
func (cfg Config) localUpArgs(c cell) []string {
	args := []string{"--controllers=true", "--nodes=" + strconv.Itoa(c.nodes)}
	if cfg.NodeKind == NodesKwok {
		// No leader election: upstream's restart storm can hold a lease
		// renewal past its deadline, and a controller that loses its
		// lease exits, which stops the cluster and loses the cell.
		args = []string{"--controllers=true", "--leader-elect=false", "--nodes=0", "--kwok-nodes=" + strconv.Itoa(c.nodes)}
	}
	args = append(args, "--ready-timeout="+cfg.ReadyTimeout.String())
	if cfg.ControllerQPS > 0 {
		args = append(args, "--controller-kube-api-qps="+strconv.FormatFloat(cfg.ControllerQPS, 'f', -1, 64))
	}
	if c.mode == modeHA {
		args = append(args, "--apiservers=2", "--etcd-members=3")
	}
	args = append(args, clusterArgs(c.config)...)
	return append(args, cfg.LocalUpArgs...)
}

func cellDir(root string, c cell) string {
	name := fmt.Sprintf("%s-%d-%s", c.mode, c.nodes, c.config)
	if c.repeat > 0 {
		name += fmt.Sprintf("-r%d", c.repeat)
	}
	return filepath.Join(root, name)
}
