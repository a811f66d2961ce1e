package watchlist

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// ownConnection returns a copy of rc whose clients get a transport, and so
// a TCP connection, of their own: client-go otherwise multiplexes every
// client over one HTTP/2 connection, and the WatchLists' megabytes would
// queue the small reads behind them in this process, not in the server.
func ownConnection(rc *rest.Config) *rest.Config {
	c := rest.CopyConfig(rc)
	c.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	return c
}

// readFunc does one read and says whether its answer was what the data set
// holds (a wrong answer counts as an error).
type readFunc func(ctx context.Context, cs kubernetes.Interface, rnd *rand.Rand) error

// readers are the read kinds' closed loops of one phase.
type readers struct {
	kinds map[string]readFunc
	small int
}

func newReaders(small int) *readers {
	r := &readers{small: small}
	consistent := metav1.GetOptions{ResourceVersion: ""}
	list := metav1.ListOptions{ResourceVersion: ""}
	r.kinds = map[string]readFunc{
		ReadGetSecret: getSmall(small, func(ctx context.Context, cs kubernetes.Interface, name string) (metav1.Object, error) {
			return cs.CoreV1().Secrets(smallNamespace).Get(ctx, name, consistent)
		}),
		ReadListSecrets: listSmall(small, "secrets", func(ctx context.Context, cs kubernetes.Interface) (runtime.Object, error) {
			return cs.CoreV1().Secrets(smallNamespace).List(ctx, list)
		}),
		ReadGetConfigMap: getSmall(small, func(ctx context.Context, cs kubernetes.Interface, name string) (metav1.Object, error) {
			return cs.CoreV1().ConfigMaps(smallNamespace).Get(ctx, name, consistent)
		}),
		ReadListConfigMap: listSmall(small, "configmaps", func(ctx context.Context, cs kubernetes.Interface) (runtime.Object, error) {
			return cs.CoreV1().ConfigMaps(smallNamespace).List(ctx, list)
		}),
	}
	return r
}

// getSmall is the read of one random object of the small namespace, with
// get; an answer naming another object is an error.
func getSmall(small int, get func(ctx context.Context, cs kubernetes.Interface, name string) (metav1.Object, error)) readFunc {
	return func(ctx context.Context, cs kubernetes.Interface, rnd *rand.Rand) error {
		name := smallName(rnd.IntN(small))
		o, err := get(ctx, cs, name)
		if err == nil && o.GetName() != name {
			err = fmt.Errorf("GET %s answered %s", name, o.GetName())
		}
		return err
	}
}

// listSmall is the LIST of one kind (plural, for the error) of the small
// namespace, with list; an answer without exactly small items is an
// error.
func listSmall(small int, kind string, list func(ctx context.Context, cs kubernetes.Interface) (runtime.Object, error)) readFunc {
	return func(ctx context.Context, cs kubernetes.Interface, _ *rand.Rand) error {
		l, err := list(ctx, cs)
		if err == nil && meta.LenList(l) != small {
			err = fmt.Errorf("LIST answered %d %s, want %d", meta.LenList(l), kind, small)
		}
		return err
	}
}

// readClient is one closed loop's connection.
type readClient struct {
	kind string
	cs   kubernetes.Interface
}

// newReadClients builds perKind clients of every read kind, each on its
// own connection.
func newReadClients(rc *rest.Config, perKind int) ([]readClient, error) {
	var out []readClient
	for _, kind := range AllReads {
		for range perKind {
			cs, err := kubernetes.NewForConfig(ownConnection(rc))
			if err != nil {
				return nil, fmt.Errorf("watchlist: client: %w", err)
			}
			out = append(out, readClient{kind: kind, cs: cs})
		}
	}
	return out, nil
}

// readTally is one read kind's results over a phase.
type readTally struct {
	// lat holds every finished read's latency and, as a lower bound, the
	// time each read cut by the end of the phase had waited.
	lat      []time.Duration
	ops      int64 // finished reads
	cut      int64 // reads cut by the end of the phase
	errs     int64
	firstErr string
}

// run loops every client until ctx is done and returns each kind's
// tally. A read cut by the end of the phase is no error and no op, but its
// time so far goes into the latencies: when reads take seconds, the cut
// ones are the slowest, and leaving them out would bias the tail low.
func (r *readers) run(ctx context.Context, clients []readClient) map[string]*readTally {
	var (
		mu  sync.Mutex
		out = map[string]*readTally{}
		wg  sync.WaitGroup
	)
	for _, k := range AllReads {
		out[k] = &readTally{}
	}
	for ci, c := range clients {
		wg.Go(func() {
			read := r.kinds[c.kind]
			rnd := rand.New(rand.NewPCG(uint64(ci), 11))
			var local readTally
			for ctx.Err() == nil {
				t0 := time.Now()
				err := read(ctx, c.cs, rnd)
				d := time.Since(t0)
				if err != nil && ctx.Err() != nil {
					local.cut++
					local.lat = append(local.lat, d)
					break
				}
				if err != nil {
					local.errs++
					if local.firstErr == "" {
						local.firstErr = err.Error()
					}
					continue
				}
				local.ops++
				local.lat = append(local.lat, d)
			}
			mu.Lock()
			defer mu.Unlock()
			t := out[c.kind]
			t.lat = append(t.lat, local.lat...)
			t.ops += local.ops
			t.cut += local.cut
			t.errs += local.errs
			if t.firstErr == "" {
				t.firstErr = local.firstErr
			}
		})
	}
	wg.Wait()
	return out
}

// readStats summarises the tallies over a phase of secs seconds.
func readStats(tallies map[string]*readTally, secs float64) []ReadStats {
	out := make([]ReadStats, 0, len(AllReads))
	for _, kind := range AllReads {
		t := tallies[kind]
		s := ReadStats{Kind: kind, Ops: t.ops, Cut: t.cut, Errors: t.errs, FirstError: t.firstErr}
		if secs > 0 {
			s.OpsPerSec = float64(s.Ops) / secs
		}
		s.P50Ms, s.P99Ms, s.MaxMs = latencySummary(t.lat)
		out = append(out, s)
	}
	return out
}
