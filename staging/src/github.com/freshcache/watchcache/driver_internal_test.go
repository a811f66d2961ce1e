package watchcache

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/freshcache/watchcache/freshness"
	"github.com/freshcache/watchcache/metrics"
)

type unusedSource struct{}

func (unusedSource) RevisionFor(context.Context, int) (int64, error) {
	return 0, errors.New("no fetch may be issued once the driver has stopped")
}

// TestStoppedDriverDoesNotSpin: once the driver has stopped it issues no
// fetch or progress request, yet the Machine keeps asking for them while
// reads are pending. processLocked must hand out what is resolved and
// return, not loop on those requests while it holds the lock. The
// robustness run's restart-cache fault hung Cache.Stop on this: the fetch
// in flight ended after the stop, a second read was still pending (its
// goroutine had not yet seen the stop), and the fetch goroutine spun with
// the lock held, so neither the read nor shutdown could proceed. Here the
// pending reads are registered directly, as a reader that has not yet
// reacted to the stop leaves them.
func TestStoppedDriverDoesNotSpin(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(m *freshness.Machine) error
	}{
		{"fetch failed", func(m *freshness.Machine) error { return m.FetchFailed(context.Canceled) }},
		{"fetch answered above the cache", func(m *freshness.Machine) error { return m.FetchAnswered(100, time.Time{}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDriver(driverConfig{Source: unusedSource{}, Progress: func(context.Context) error { return nil }, Clock: clock.RealClock{}, Timeout: time.Minute, Metrics: metrics.Discard{}, Name: "pods", Stop: make(chan struct{})})
			d.mu.Lock()
			m := d.mu.m
			if err := m.ReadArrived(freshness.Read{ID: 1, Kind: freshness.Consistent}); err != nil {
				t.Fatal(err)
			}
			if _, err := m.FetchIssued(); err != nil {
				t.Fatal(err)
			}
			if err := m.ReadArrived(freshness.Read{ID: 2, Kind: freshness.Consistent}); err != nil {
				t.Fatal(err)
			}
			d.mu.stopped = true
			if err := tc.end(m); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() {
				d.processLocked()
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("processLocked did not return on a stopped driver with a read pending")
			}
			if st := m.Status(); st.FetchInFlight || st.ProgressInFlight {
				t.Errorf("a stopped driver issued a request: %+v", st)
			}
			d.mu.Unlock()
		})
	}
}
