package upstreame2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/freshcache/freshcache/lab/internal/scrape"
	"github.com/freshcache/freshcache/lab/pkg/counters"
	"github.com/freshcache/freshcache/lab/pkg/localup/launch"
)

// Implementation is one watch cache configuration of the kube-apiserver.
type Implementation struct {
	// Name is the one the closing line and the report use.
	Name string
	// Args are kube-apiserver flags (local-up passes them on).
	Args []string
	// Freshcache says /metrics must show freshcache's read counters.
	Freshcache bool
}

// Implementations are the runs, in report order.
var Implementations = []Implementation{
	{Name: "upstream", Args: []string{"--watch-cache-implementation=upstream"}},
	{Name: "freshcache", Args: []string{"--watch-cache-implementation=freshcache", "--feature-gates=FreshResourceVersionZero=false"}, Freshcache: true},
	{Name: "freshcache-fresh-rv0", Args: []string{"--watch-cache-implementation=freshcache", "--feature-gates=FreshResourceVersionZero=true"}, Freshcache: true},
}

// ImplementationByName finds one of Implementations.
func ImplementationByName(name string) (Implementation, bool) {
	for _, i := range Implementations {
		if i.Name == name {
			return i, true
		}
	}
	return Implementation{}, false
}

// clusterArgs are local-up's flags for every run: the whole cluster
// (controller-manager, scheduler) and etcd compacted every minute instead
// of every five, so that the chunking test that waits for a compaction
// waits two minutes, not ten. The nodes are two hollow ones, or with
// realNode one real node alone (containerd, the kubelet, kube-proxy,
// CoreDNS and upstream's agnhost image), so that every test pod runs as
// real processes.
func clusterArgs(realNode bool) []string {
	args := []string{"--controllers=true", "--etcd-compaction-interval=1m"}
	if !realNode {
		return append(args, "--nodes=2")
	}
	return append(args, "--nodes=0", "--real-nodes=1", "--real-node-kube-proxy", "--real-node-dns", "--real-node-e2e-images")
}

// Options say how to run the suite once.
type Options struct {
	// BinDir holds local-up, kube-apiserver, the controllers, kubemark and
	// kubectl (make build's _output/bin).
	BinDir string
	// Kubectl is the kubectl the tests run; empty means BinDir's.
	Kubectl string
	// SuiteDir holds e2e.test and ginkgo.
	SuiteDir string
	// OutDir receives the cluster's data, logs and the junit report.
	OutDir string
	// Procs is how many ginkgo processes run specs in parallel.
	Procs int
	// Timeout bounds the ginkgo run.
	Timeout time.Duration
	// RealNode runs the cluster with one real node instead of hollow
	// nodes (root only).
	RealNode bool
	// Kind, when set, runs the suite on a kind cluster instead of
	// local-up (real nodes: the selection is RealNode's).
	Kind *Kind
}

// Run is the outcome of one implementation's run.
type Run struct {
	Impl     Implementation
	Specs    map[string]Result
	Suite    []Result // suite nodes that failed
	Counts   Counts
	Missing  []string // selected but absent from the report
	Reads    map[string]float64
	Duration time.Duration
	JUnit    string
}

// ClosingLine is the run's one-line summary.
func (r *Run) ClosingLine() string {
	return fmt.Sprintf("e2e-conformance %s: %d passed, %d failed, %d skipped", r.Impl.Name, r.Counts.Passed, r.Counts.Failed, r.Counts.Skipped)
}

// ListTests asks e2e.test (a dry run) for the names of all its tests.
func ListTests(ctx context.Context, suiteDir, outDir string) ([]string, error) {
	report := filepath.Join(outDir, "dry-run.xml")
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(suiteDir, "e2e.test"),
		"--ginkgo.dry-run", "--ginkgo.no-color", "--ginkgo.junit-report="+report,
		"--provider=skeleton", "--kubeconfig=/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("e2e.test --ginkgo.dry-run: %v\n%s", err, tail(out, 2000))
	}
	specs, _, err := ReadJUnit(report)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(specs))
	for n := range specs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// RunSuite starts a fresh cluster for impl (local-up, or kind with
// o.Kind), runs the selection on it and stops the cluster. An error means
// the run could not be made (the cluster did not start, ginkgo could not
// run or wrote no report); failed tests are in the returned Run, not in
// the error.
func RunSuite(ctx context.Context, o Options, impl Implementation, sel *Selection) (*Run, error) {
	dir := filepath.Join(o.OutDir, impl.Name)
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	start := o.startLocalUp
	if o.Kind != nil {
		start = o.Kind.start
	}
	kubeconfig, stop, err := start(ctx, impl, dir)
	if err != nil {
		return nil, err
	}
	defer func() { _ = stop() }()
	return runGinkgo(ctx, o, impl, sel, dir, kubeconfig)
}

// startLocalUp starts a local-up cluster for impl, its data under dir.
func (o Options) startLocalUp(ctx context.Context, impl Implementation, dir string) (kubeconfig string, stop func() error, err error) {
	args := append(clusterArgs(o.RealNode), impl.Args...)
	dataDir := filepath.Join(dir, "cluster")
	if o.RealNode {
		// The real node's unix sockets live under the data directory and
		// their paths must fit in 108 bytes: the cluster's data goes to a
		// short directory, linked from the run's.
		short := filepath.Join(os.TempDir(), "fce2e", impl.Name)
		if err := os.RemoveAll(short); err != nil {
			return "", nil, err
		}
		if err := os.MkdirAll(short, 0o755); err != nil {
			return "", nil, err
		}
		if err := os.Symlink(short, dataDir); err != nil {
			return "", nil, err
		}
		dataDir = short
	}
	lu, err := launch.Start(ctx, launch.Options{BinDir: o.BinDir, DataDir: dataDir, Args: args})
	if err != nil {
		return "", nil, fmt.Errorf("%s: starting local-up: %w", impl.Name, err)
	}
	return lu.Ready.Kubeconfig, func() error { return lu.Stop(0) }, nil
}

// runGinkgo runs the selection against the cluster of kubeconfig, its
// report and log under dir.
func runGinkgo(ctx context.Context, o Options, impl Implementation, sel *Selection, dir, kubeconfig string) (*Run, error) {
	cs, err := clientFor(kubeconfig)
	if err != nil {
		return nil, err
	}
	before, err := readCounters(ctx, cs)
	if err != nil {
		return nil, fmt.Errorf("%s: /metrics before the run: %w", impl.Name, err)
	}

	run := &Run{Impl: impl, JUnit: filepath.Join(dir, "junit.xml")}
	procs := o.Procs
	if procs <= 0 {
		procs = 4
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 40 * time.Minute
	}
	start := time.Now()
	cmd := exec.CommandContext(ctx, filepath.Join(o.SuiteDir, "ginkgo"),
		"-p", "--procs="+strconv.Itoa(procs), "--no-color", "--timeout="+timeout.String(),
		// Ginkgo puts report files under --output-dir, absolute or not.
		"--junit-report="+filepath.Base(run.JUnit), "--output-dir="+dir,
		"--focus="+sel.Focus(),
		filepath.Join(o.SuiteDir, "e2e.test"), "--",
		"--provider=skeleton",
		"--kubeconfig="+kubeconfig,
		"--kubectl-path="+o.kubectl(),
		"--report-dir="+dir,
	)
	log, err := os.Create(filepath.Join(dir, "ginkgo.log"))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	runErr := cmd.Run() // non-zero when a test failed: the report says which
	run.Duration = time.Since(start)

	run.Specs, run.Suite, err = ReadJUnit(run.JUnit)
	if err != nil {
		return nil, fmt.Errorf("%s: ginkgo (%v) wrote no readable report, see %s: %w", impl.Name, runErr, log.Name(), err)
	}
	run.Counts, run.Missing = Tally(sel.Run, run.Specs)
	after, err := readCounters(ctx, cs)
	if err != nil {
		return nil, fmt.Errorf("%s: /metrics after the run: %w", impl.Name, err)
	}
	run.Reads = counters.Delta(before, after)
	return run, nil
}

func clientFor(kubeconfig string) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// readsMetric is the counter that proves freshcache served reads.
const readsMetric = "apiserver_freshcache_reads_total"

// readCounters sums readsMetric's samples over resources, keyed by
// "verb requested outcome".
func readCounters(ctx context.Context, cs kubernetes.Interface) (map[string]float64, error) {
	body, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	samples, err := scrape.Samples(body)
	if err != nil {
		return nil, err
	}
	return sumReads(samples), nil
}

// sumReads keeps readsMetric's samples, summed by "verb requested outcome".
func sumReads(samples map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range samples {
		rest, ok := strings.CutPrefix(k, readsMetric+"{")
		if !ok {
			continue
		}
		labels := strings.TrimSuffix(rest, "}")
		out[label(labels, "verb")+" "+label(labels, "requested")+" "+label(labels, "outcome")] += v
	}
	return out
}

// ServedFromCache is how many reads counted in reads the cache served.
func ServedFromCache(reads map[string]float64) float64 {
	total := 0.0
	for k, v := range reads {
		if strings.HasSuffix(k, " cache") {
			total += v
		}
	}
	return total
}

// label picks one label's value out of a sample's label text.
func label(labels, name string) string {
	for _, kv := range strings.Split(labels, ",") {
		k, v, _ := strings.Cut(kv, "=")
		if k == name {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// kubectl is the kubectl the tests run: Kubectl, else BinDir's.
func (o Options) kubectl() string {
	if o.Kubectl != "" {
		return o.Kubectl
	}
	return filepath.Join(o.BinDir, "kubectl")
}
