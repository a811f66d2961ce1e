package watchlist

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// errNoBookmark: the stream ended before the initial-events-end bookmark.
var errNoBookmark = errors.New("watchlist: watch ended before the initial-events-end bookmark")

// retryPause paces a loop whose WatchList failed at once (a 429 or a
// refused watch), so that it does not spin.
const retryPause = 200 * time.Millisecond

// watchListClient is one WatchList loop's connection.
type watchListClient struct {
	rest rest.Interface
}

func newWatchListClients(rc *rest.Config, n int) ([]watchListClient, error) {
	out := make([]watchListClient, 0, n)
	for range n {
		cs, err := kubernetes.NewForConfig(ownConnection(rc))
		if err != nil {
			return nil, fmt.Errorf("watchlist: client: %w", err)
		}
		out = append(out, watchListClient{rest: cs.CoreV1().RESTClient()})
	}
	return out, nil
}

// watchListTally is the WatchLists of one phase.
type watchListTally struct {
	durations []time.Duration
	initial   []int64 // ADDED events before the bookmark, per completion
	errs      int64
	firstErr  string
	cancelled int64
	events    atomic.Int64
}

// runWatchLists loops every client until ctx is done: a WatchList of
// every configmap (rv="", NotOlderThan, sendInitialEvents, bookmarks),
// read until the initial-events-end bookmark, then closed, and again.
func runWatchLists(ctx context.Context, clients []watchListClient, timeout time.Duration) *watchListTally {
	var (
		mu sync.Mutex
		t  = &watchListTally{}
		wg sync.WaitGroup
	)
	for _, c := range clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				t0 := time.Now()
				initial, err := c.once(ctx, timeout, &t.events)
				d := time.Since(t0)
				mu.Lock()
				switch {
				case err == nil:
					t.durations = append(t.durations, d)
					t.initial = append(t.initial, initial)
				case ctx.Err() != nil:
					t.cancelled++
				default:
					t.errs++
					if t.firstErr == "" {
						t.firstErr = err.Error()
					}
				}
				mu.Unlock()
				if err != nil && ctx.Err() == nil {
					pause := time.NewTimer(retryPause)
					select {
					case <-ctx.Done():
					case <-pause.C:
					}
					pause.Stop()
				}
			}
		})
	}
	wg.Wait()
	return t
}

// once runs one WatchList and returns the number of initial events.
func (c watchListClient) once(ctx context.Context, timeout time.Duration, events *atomic.Int64) (int64, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("watchlist: no initial-events-end bookmark within %v", timeout))
	defer cancel()
	opts := metav1.ListOptions{
		Watch:                true,
		ResourceVersion:      "",
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		SendInitialEvents:    ptr.To(true),
		AllowWatchBookmarks:  true,
	}
	body, err := c.rest.Get().Resource(resConfigMaps).
		VersionedParams(&opts, scheme.ParameterCodec).
		SetHeader("Accept", "application/vnd.kubernetes.protobuf;stream=watch").
		Stream(ctx)
	if err != nil {
		return 0, causeOf(ctx, err)
	}
	defer func() { _ = body.Close() }()
	fr := newFrameReader(body)
	var initial int64
	for {
		frame, err := fr.next()
		if errors.Is(err, io.EOF) {
			return initial, errNoBookmark
		}
		if err != nil {
			return initial, causeOf(ctx, err)
		}
		events.Add(1)
		typ, obj, err := parseEvent(frame)
		if err != nil {
			return initial, err
		}
		switch typ {
		case "ADDED":
			initial++
		case "BOOKMARK":
			end, err := isInitialEventsEnd(obj)
			if err != nil {
				return initial, err
			}
			if end {
				return initial, nil
			}
		case "ERROR":
			return initial, eventError(obj)
		}
	}
}

// causeOf prefers the context's cause (the WatchList timeout) to the
// read error it produced.
func causeOf(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		if c := context.Cause(ctx); c != nil {
			return c
		}
	}
	return err
}

// watchListStats summarises a phase's WatchLists.
func watchListStats(t *watchListTally) WatchListStats {
	s := WatchListStats{
		Completed: int64(len(t.durations)), Errors: t.errs, FirstError: t.firstErr,
		Cancelled: t.cancelled, Events: t.events.Load(),
	}
	s.P50Ms, s.P99Ms, s.MaxMs = latencySummary(t.durations)
	for i, n := range t.initial {
		if i == 0 || n < s.InitialEventsMin {
			s.InitialEventsMin = n
		}
		s.InitialEventsMax = max(s.InitialEventsMax, n)
	}
	return s
}
