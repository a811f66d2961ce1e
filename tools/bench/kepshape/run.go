package kepshape

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/freshcache/freshcache/lab/pkg/localup/launch"
	"github.com/freshcache/freshcache/tools/bench/etcdload"
	"github.com/freshcache/freshcache/tools/bench/procfs"
	"github.com/freshcache/freshcache/tools/bench/servermetrics"
)

// Selector is the LISTs' label selector: no object has the label.
const Selector = "kep-2340-shape=matches-nothing"

var configMapsGR = schema.GroupResource{Resource: "configmaps"}

// Row is one configuration's window.
type Row struct {
	Config  string `json:"config"`
	Objects int    `json:"objects"`
	// LoadSeconds is the etcd load until the first consistent LIST
	// answered: the cache's catch-up included.
	LoadSeconds float64 `json:"load_seconds"`
	Seconds     float64 `json:"seconds"`
	// APICPUSec and EtcdCPUSec are the window's CPU (etcd: local-up's
	// process, which runs the embedded member); APIRSSMB the apiserver's
	// RSS at the window's end.
	APICPUSec  float64 `json:"apiserver_cpu_seconds"`
	EtcdCPUSec float64 `json:"etcd_cpu_seconds"`
	APIRSSMB   float64 `json:"apiserver_rss_mb"`
	// EtcdRanges are the Range requests etcd served in the window.
	EtcdRanges float64 `json:"etcd_ranges"`
	// Lists were sent in the window; Errors failed, timed out or returned
	// an object. Latencies are of the answered ones, client side.
	Lists  int     `json:"lists"`
	Errors int     `json:"errors"`
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
	MaxMs  float64 `json:"max_ms"`
	// FirstError is the first error's text, for the report.
	FirstError string `json:"first_error,omitempty"`
}

// APICores is the apiserver's mean cores over the window.
func (r Row) APICores() float64 { return r.APICPUSec / r.Seconds }

// EtcdCores is etcd's mean cores over the window.
func (r Row) EtcdCores() float64 { return r.EtcdCPUSec / r.Seconds }

// Run measures every configuration in turn. A configuration that fails
// stops the run; the rows before it are returned.
func Run(ctx context.Context, cfg Config) ([]Row, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	var rows []Row
	for _, c := range cfg.Configs {
		fmt.Fprintf(cfg.Progress, "# %s: %d configmaps of %d bytes\n", c, cfg.Objects, cfg.ValueBytes)
		r, err := runOne(ctx, cfg, c)
		if err != nil {
			return rows, fmt.Errorf("kep-2340 %s: %w", c, err)
		}
		fmt.Fprintf(cfg.Progress, "# %s: apiserver %.2f cores, etcd %.2f cores, %d LISTs (%d errors), p50 %.0f ms, p99 %.0f ms\n",
			c, r.APICores(), r.EtcdCores(), r.Lists, r.Errors, r.P50Ms, r.P99Ms)
		rows = append(rows, r)
	}
	return rows, nil
}

func runOne(ctx context.Context, cfg Config, config string) (Row, error) {
	row := Row{Config: config, Objects: cfg.Objects}
	dir := filepath.Join(cfg.DataDir, config)
	lu, err := launch.Start(ctx, launch.Options{BinDir: cfg.BinDir, DataDir: dir, Args: append(localUpArgs(config), "--ready-timeout="+cfg.ReadyTimeout.String())})
	if err != nil {
		return row, err
	}
	defer func() { _ = lu.Stop(0) }()
	if len(lu.Ready.APIServers) != 1 || len(lu.Ready.Etcd.Endpoints) == 0 {
		return row, fmt.Errorf("local-up's ready file lists %d apiservers and etcd %v", len(lu.Ready.APIServers), lu.Ready.Etcd.Endpoints)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", lu.Ready.Kubeconfig)
	if err != nil {
		return row, err
	}
	rc.QPS, rc.Burst = -1, 0
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	rc.Timeout = cfg.ListTimeout
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return row, err
	}

	began := time.Now()
	if err := load(ctx, cfg, cs, lu.Ready.Etcd.Endpoints[0]); err != nil {
		return row, err
	}
	row.LoadSeconds = time.Since(began).Seconds()
	fmt.Fprintf(cfg.Progress, "#   loaded and served after %.0fs\n", row.LoadSeconds)

	apiPID, etcdPID := lu.Ready.APIServers[0].PID, lu.Ready.PID
	etcdMetrics := strings.TrimSuffix(lu.Ready.Etcd.Endpoints[0], "/") + "/metrics"
	hc := &http.Client{Timeout: 30 * time.Second}
	if _, err := runLists(ctx, cs, cfg.ListRate, cfg.Warmup); err != nil {
		return row, err
	}
	e0, err := servermetrics.Scrape(ctx, hc, etcdMetrics)
	if err != nil {
		return row, err
	}
	t0, a0, d0 := time.Now(), procfs.CPUTicks([]int{apiPID}), procfs.CPUTicks([]int{etcdPID})
	res, err := runLists(ctx, cs, cfg.ListRate, cfg.Window)
	if err != nil {
		return row, err
	}
	t1, a1, d1 := time.Now(), procfs.CPUTicks([]int{apiPID}), procfs.CPUTicks([]int{etcdPID})
	e1, err := servermetrics.Scrape(ctx, hc, etcdMetrics)
	if err != nil {
		return row, err
	}
	if !procfs.Alive(apiPID) {
		return row, fmt.Errorf("kube-apiserver (pid %d) is gone; its log: %s", apiPID, lu.Ready.APIServers[0].Log)
	}
	row.Seconds = t1.Sub(t0).Seconds()
	row.APICPUSec = (a1 - a0) / procfs.ClockTicksPerSec
	row.EtcdCPUSec = (d1 - d0) / procfs.ClockTicksPerSec
	row.APIRSSMB = procfs.RSSMB(apiPID)
	ec := servermetrics.EtcdCountersFrom(e1).Sub(servermetrics.EtcdCountersFrom(e0))
	row.EtcdRanges = ec.Ranges + ec.RangeStreams
	res.fill(&row)
	return row, nil
}

// load writes the configmaps to etcd, then one through the apiserver,
// and waits until a consistent LIST returns that one: the cache (if any)
// then holds every object written before it.
func load(ctx context.Context, cfg Config, cs kubernetes.Interface, endpoint string) error {
	w, err := etcdload.New(etcdload.Options{Endpoint: endpoint, Resources: []schema.GroupResource{configMapsGR}})
	if err != nil {
		return err
	}
	defer func() { _ = w.Close() }()
	for n := range cfg.Namespaces {
		ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace(n)}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	value := strings.Repeat("x", cfg.ValueBytes)
	err = etcdload.Load(ctx, cfg.Objects, cfg.LoadWriters, func(ctx context.Context, i int) error {
		cm := configMap(namespace(i%cfg.Namespaces), fmt.Sprintf("cm-%07d", i), i, value)
		if _, err := w.Put(ctx, configMapsGR, cm.Namespace, cm.Name, cm); err != nil {
			return fmt.Errorf("writing configmap %d: %w", i, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	marker := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "loaded", Namespace: namespace(0), Labels: map[string]string{"kep-2340-loaded": "true"}}}
	if _, err := cs.CoreV1().ConfigMaps(marker.Namespace).Create(ctx, marker, metav1.CreateOptions{}); err != nil {
		return err
	}
	deadline := time.Now().Add(cfg.ReadyTimeout)
	for {
		l, err := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{LabelSelector: "kep-2340-loaded=true"})
		if err == nil && len(l.Items) == 1 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the loaded marker not listed after %s: %v", cfg.ReadyTimeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func namespace(n int) string { return fmt.Sprintf("kep-%02d", n) }

// configMap is object i: a 1 KiB value, labels that Selector never
// matches.
func configMap(ns, name string, i int, value string) *v1.ConfigMap {
	return etcdload.ConfigMap(ns, name, int64(i),
		map[string]string{"app": "kep-2340", "shard": fmt.Sprint(i % 100)},
		map[string]string{"value": value})
}

// listResults are one phase's LISTs.
type listResults struct {
	sent   int
	errs   []string
	millis []float64
}

func (r listResults) fill(row *Row) {
	row.Lists, row.Errors = r.sent, len(r.errs)
	if len(r.errs) > 0 {
		row.FirstError = r.errs[0]
	}
	if len(r.millis) == 0 {
		return
	}
	s := slices.Clone(r.millis)
	slices.Sort(s)
	row.P50Ms, row.P99Ms, row.MaxMs = nearestRank(s, 0.5), nearestRank(s, 0.99), s[len(s)-1]
}

// nearestRank is the q quantile of sorted by nearest rank.
func nearestRank(sorted []float64, q float64) float64 {
	k := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[max(0, min(k, len(sorted)-1))]
}

// runLists sends a consistent LIST of every namespace's configmaps with
// Selector every 1/rate seconds for d (open loop: a slow answer does not
// hold back the next LIST), and waits for the ones in flight.
func runLists(ctx context.Context, cs kubernetes.Interface, rate float64, d time.Duration) (listResults, error) {
	var (
		mu  sync.Mutex
		res listResults
		wg  sync.WaitGroup
	)
	if d <= 0 {
		return res, nil
	}
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	end := time.After(d)
	send := func() {
		defer wg.Done()
		t0 := time.Now()
		l, err := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{LabelSelector: Selector})
		el := float64(time.Since(t0)) / float64(time.Millisecond)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err != nil:
			res.errs = append(res.errs, err.Error())
		case len(l.Items) != 0:
			res.errs = append(res.errs, fmt.Sprintf("%d objects match %s, want none", len(l.Items), Selector))
		default:
			res.millis = append(res.millis, el)
		}
	}
	for {
		wg.Add(1)
		res.sent++
		go send()
		select {
		case <-ctx.Done():
			wg.Wait()
			return res, ctx.Err()
		case <-end:
			wg.Wait()
			return res, nil
		case <-tick.C:
		}
	}
}
