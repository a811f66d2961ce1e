package cluster

// The cluster benchmark's own clients: LISTs at fixed rates (like kubelets
// listing their node's pods and monitoring listing every pod), and the
// freshness probe that writes a pod through one apiserver and reads it
// back at once.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/freshcache/freshcache/tools/bench/quantile"
	"github.com/freshcache/freshcache/tools/bench/report"
)

// Read kinds of the LIST clients, the probe and the calibration.
const (
	readListNode   = "list-node"  // LIST pods, spec.nodeName=<node>
	readListAll    = "list-all"   // LIST every pod
	readGet        = "get"        // GET one pod
	readProbeList  = "list-probe" // LIST the probe pod by metadata.name
	maxListClients = 64           // in flight per kind; more are skipped
	maxListAll     = 8            // in flight of list-all: each holds every pod
	probeName      = "freshness-probe"
	probeSeqKey    = "cluster-bench/seq"
	schedulingGate = "cluster-bench/never"
)

// The resourceVersion of a read: rvConsistent is rv="" (a consistent
// read), rvZero is rv=0. The values are the storage benchmark's names of
// the same modes, and what ReadStats.RV and CalibRow.RV hold.
const (
	rvConsistent = `""`
	rvZero       = "0"
)

// rvLabel is how tables and term names write a resourceVersion mode.
func rvLabel(rv string) string {
	if rv == rvConsistent {
		return `rv=""`
	}
	return "rv=" + rv
}

// ReadStats are one read kind's client-side figures.
type ReadStats struct {
	Kind string `json:"kind"`
	RV   string `json:"rv"` // `""` (a consistent read) or "0"
	// Rate is what was asked, per second.
	Rate float64 `json:"rate"`
	Sent int64   `json:"sent"`
	// OK counts the answered requests (the latencies' sample).
	OK int64 `json:"ok"`
	// Skipped ticks found maxListClients (maxListAll) in flight.
	Skipped    int64   `json:"skipped,omitempty"`
	Errors     int64   `json:"errors"`
	FirstError string  `json:"first_error,omitempty"`
	P50Ms      float64 `json:"p50_ms"`
	P99Ms      float64 `json:"p99_ms"`
	// Items is the mean items per LIST.
	Items float64 `json:"items"`
}

// readTarget is what one read kind needs: the clients to spread over and
// the nodes to pick from.
type readTarget struct {
	clients []kubernetes.Interface
	nodes   []string
}

func rvParam(rv string) string {
	if rv == rvZero {
		return "0"
	}
	return ""
}

// read does one read of kind at rv on cs and returns the items it got.
func (t readTarget) read(ctx context.Context, cs kubernetes.Interface, kind, rv string, rnd *rand.Rand) (int, error) {
	switch kind {
	case readListNode:
		node := t.nodes[rnd.IntN(len(t.nodes))]
		l, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node, ResourceVersion: rvParam(rv)})
		if err != nil {
			return 0, err
		}
		return len(l.Items), nil
	case readListAll:
		l, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{ResourceVersion: rvParam(rv)})
		if err != nil {
			return 0, err
		}
		return len(l.Items), nil
	case readGet:
		_, err := cs.CoreV1().Pods(clusterNamespace).Get(ctx, probeName, metav1.GetOptions{ResourceVersion: rvParam(rv)})
		return 1, err
	}
	return 0, fmt.Errorf("cluster: unknown read kind %q", kind)
}

// runReads issues reads of kind at rv, rate per second, open loop (a slow
// answer does not delay the next request), spread round-robin over the
// target's clients, until end, and returns once the last answer is in (or
// ctx is done). The node order comes from seed
// alone (callers give each kind its own).
func (t readTarget) runReads(ctx context.Context, end time.Time, kind, rv string, rate float64, seed uint64) ReadStats {
	st := ReadStats{Kind: kind, RV: rv, Rate: rate}
	if rate <= 0 {
		return st
	}
	var (
		mu       sync.Mutex
		lat      []time.Duration
		items    int64
		errs     atomic.Int64
		first    report.FirstError
		inflight atomic.Int64
		wg       sync.WaitGroup
	)
	limit := int64(maxListClients)
	if kind == readListAll {
		limit = maxListAll
	}
	rnd := rand.New(rand.NewPCG(seed, 0x7265616473)) // "reads"
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	stop := time.NewTimer(time.Until(end))
	defer stop.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
		case <-stop.C:
		case <-tick.C:
		}
		if ctx.Err() != nil || !time.Now().Before(end) {
			wg.Wait()
			st.Errors, st.FirstError = errs.Load(), first.Get()
			slices.Sort(lat)
			st.OK = int64(len(lat))
			st.P50Ms, st.P99Ms = ms(quantile.Percentile(lat, 50)), ms(quantile.Percentile(lat, 99))
			if st.OK > 0 {
				st.Items = float64(items) / float64(st.OK)
			}
			return st
		}
		if inflight.Load() >= limit {
			st.Skipped++
			continue
		}
		st.Sent++
		inflight.Add(1)
		wg.Add(1)
		cs := t.clients[i%len(t.clients)]
		r := rand.New(rand.NewPCG(rnd.Uint64(), 0))
		go func() {
			defer wg.Done()
			defer inflight.Add(-1)
			t0 := time.Now()
			n, err := t.read(ctx, cs, kind, rv, r)
			d := time.Since(t0)
			if err != nil {
				if ctx.Err() == nil {
					errs.Add(1)
					first.Set(err.Error())
				}
				return
			}
			mu.Lock()
			lat = append(lat, d)
			items += int64(n)
			mu.Unlock()
		}()
	}
}

// ProbeStats are the freshness probe's counts: Reads and Stale per read
// ("get rv=0", "list rv=\"\"", ...).
type ProbeStats struct {
	Writes      int64            `json:"writes"`
	WriteErrors int64            `json:"write_errors"`
	Reads       map[string]int64 `json:"reads"`
	Stale       map[string]int64 `json:"stale"`
	ReadErrors  int64            `json:"read_errors"`
	FirstError  string           `json:"first_error,omitempty"`
	// Through says which apiservers wrote and read.
	Through string `json:"through"`
	// CrossServer: the probe read through another apiserver than it wrote
	// through, right after each write. freshcache-fresh-rv0 promises its
	// rv=0 reads only the writes acknowledged 100 ms
	// (--resource-version-zero-max-staleness) before them, and its own
	// apiserver's writes; so such an rv=0 answer is counted, and not
	// promised (promisedStale).
	CrossServer bool `json:"crossServer,omitempty"`
}

// staleTotal is every stale answer of every read kind.
func (p ProbeStats) staleTotal() int64 {
	var n int64
	for _, v := range p.Stale {
		n += v
	}
	return n
}

func probePod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: probeName, Namespace: clusterNamespace, Annotations: map[string]string{probeSeqKey: "0"}},
		Spec: corev1.PodSpec{
			// Gated: never scheduled, so only the probe ever writes it.
			SchedulingGates:               []corev1.PodSchedulingGate{{Name: schedulingGate}},
			Containers:                    []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10"}},
			TerminationGracePeriodSeconds: ptr.To(int64(0)),
		},
	}
}

// probeReads are what the probe reads after each write, all at once.
var probeReads = []struct{ kind, rv string }{
	{readGet, rvConsistent}, {readGet, rvZero}, {readProbeList, rvConsistent}, {readProbeList, rvZero},
}

func probeReadName(kind, rv string) string {
	verb := "get"
	if kind == readProbeList {
		verb = "list"
	}
	if rv == rvZero {
		return verb + " rv=0"
	}
	return verb + ` rv=""`
}

// runProbe writes the probe pod's sequence annotation through writer, rate
// times a second until end, and as soon as each write returns reads the pod through
// reader in every probeReads way at once. An answer that does not hold the
// write (an older sequence, or no pod) is stale: the write had completed
// before the read was sent.
func runProbe(ctx context.Context, end time.Time, writer, reader kubernetes.Interface, rate float64, through string, crossServer bool) ProbeStats {
	st := ProbeStats{Reads: map[string]int64{}, Stale: map[string]int64{}, Through: through, CrossServer: crossServer}
	if rate <= 0 {
		return st
	}
	var mu sync.Mutex
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	pods := writer.CoreV1().Pods(clusterNamespace)
	for seq := 1; ; seq++ {
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
		if ctx.Err() != nil || !time.Now().Before(end) {
			return st
		}
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"%d"}}}`, probeSeqKey, seq)
		if _, err := pods.Patch(ctx, probeName, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			if ctx.Err() != nil {
				return st
			}
			st.WriteErrors++
			if st.FirstError == "" {
				st.FirstError = "write: " + err.Error()
			}
			continue
		}
		st.Writes++
		var wg sync.WaitGroup
		for _, r := range probeReads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got, err := readProbeSeq(ctx, reader, r.kind, r.rv)
				mu.Lock()
				defer mu.Unlock()
				name := probeReadName(r.kind, r.rv)
				if err != nil {
					if ctx.Err() == nil {
						st.ReadErrors++
						if st.FirstError == "" {
							st.FirstError = name + ": " + err.Error()
						}
					}
					return
				}
				st.Reads[name]++
				if got < seq {
					st.Stale[name]++
				}
			}()
		}
		wg.Wait()
	}
}

// readProbeSeq reads the probe pod and returns its sequence annotation; 0
// when a LIST does not hold the pod.
func readProbeSeq(ctx context.Context, cs kubernetes.Interface, kind, rv string) (int, error) {
	pods := cs.CoreV1().Pods(clusterNamespace)
	var p *corev1.Pod
	if kind == readGet {
		got, err := pods.Get(ctx, probeName, metav1.GetOptions{ResourceVersion: rvParam(rv)})
		if err != nil {
			return 0, err
		}
		p = got
	} else {
		l, err := pods.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + probeName, ResourceVersion: rvParam(rv)})
		if err != nil {
			return 0, err
		}
		if len(l.Items) == 0 {
			return 0, nil
		}
		p = &l.Items[0]
	}
	return strconv.Atoi(p.Annotations[probeSeqKey])
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
