package netpollfloor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/freshcache/freshcache/tools/bench/ctxsleep"
)

// Options shapes one measurement. Zero fields take the defaults below.
type Options struct {
	// Busy is how many goroutines burn CPU and park on the gate.
	Busy int
	// Work is the CPU each busy goroutine burns between two waits.
	// Default 150µs, about one 100-pod LIST from the cache on this
	// project's benchmark machine.
	Work time.Duration
	// GatePeriod is how often the shared gate opens. Default 500µs.
	GatePeriod time.Duration
	// Samples is how many round trips of each kind the probe times.
	// Default 2000.
	Samples int
	// Pause is how long the probe sleeps between two pairs of round trips,
	// so that it samples the load at different moments. Default 200µs.
	Pause time.Duration
	// Warmup runs the load before the first sample. Default 100ms.
	Warmup time.Duration
}

func (o Options) withDefaults() (Options, error) {
	if o.Busy < 0 || o.Work < 0 || o.GatePeriod < 0 || o.Samples < 0 || o.Pause < 0 || o.Warmup < 0 {
		return o, fmt.Errorf("netpollfloor: negative option in %+v", o)
	}
	if o.Work == 0 {
		o.Work = 150 * time.Microsecond
	}
	if o.GatePeriod == 0 {
		o.GatePeriod = 500 * time.Microsecond
	}
	if o.Samples == 0 {
		o.Samples = 2000
	}
	if o.Pause == 0 {
		o.Pause = 200 * time.Microsecond
	}
	if o.Warmup == 0 {
		o.Warmup = 100 * time.Millisecond
	}
	return o, nil
}

// Quantiles summarises one kind of round trip.
type Quantiles struct {
	P50, P90, P99 time.Duration
}

// Result is one measurement.
type Result struct {
	Options Options
	// TCP is the round trip of one byte over loopback TCP: through the
	// network poller on both sides.
	TCP Quantiles
	// Chan is the round trip of one message over two channels: no poller.
	Chan Quantiles
	// Samples is how many round trips of each kind were timed.
	Samples int
}

// Measure starts the load, times the probe's round trips and stops the
// load again. It returns early with ctx's error if ctx ends.
func Measure(ctx context.Context, opts Options) (Result, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return Result{}, err
	}
	stopLoad := startLoad(opts)
	defer stopLoad()

	p, err := newProbe()
	if err != nil {
		return Result{}, err
	}
	defer p.close()

	if err := ctxsleep.Sleep(ctx, opts.Warmup); err != nil {
		return Result{}, err
	}
	tcp := make([]time.Duration, 0, opts.Samples)
	ch := make([]time.Duration, 0, opts.Samples)
	for range opts.Samples {
		d, err := p.tcpRoundTrip()
		if err != nil {
			return Result{}, err
		}
		tcp = append(tcp, d)
		ch = append(ch, p.chanRoundTrip())
		if err := ctxsleep.Sleep(ctx, opts.Pause); err != nil {
			return Result{}, err
		}
	}
	return Result{Options: opts, TCP: quantiles(tcp), Chan: quantiles(ch), Samples: len(tcp)}, nil
}

// startLoad starts the gate and the busy goroutines; the returned func
// stops them and waits until they are gone.
func startLoad(opts Options) (stop func()) {
	var (
		wg   sync.WaitGroup
		gate atomic.Pointer[chan struct{}]
		done = make(chan struct{})
	)
	first := make(chan struct{})
	gate.Store(&first)
	wg.Go(func() {
		t := time.NewTicker(opts.GatePeriod)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				next := make(chan struct{})
				close(*gate.Swap(&next))
			}
		}
	})
	for range opts.Busy {
		wg.Go(func() {
			for {
				burn(opts.Work)
				select {
				case <-done:
					return
				case <-*gate.Load():
				}
			}
		})
	}
	return func() {
		close(done)
		wg.Wait()
	}
}

// spent keeps burn's arithmetic from being optimised away.
var spent atomic.Uint64

// burn keeps a core busy for d without allocating or blocking.
func burn(d time.Duration) {
	end := time.Now().Add(d)
	x := uint64(1)
	for time.Now().Before(end) {
		for range 256 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	spent.Add(x)
}

// probe holds both echo paths.
type probe struct {
	ln   net.Listener
	conn net.Conn
	buf  []byte
	req  chan struct{}
	resp chan struct{}
	wg   sync.WaitGroup
}

func newProbe() (*probe, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &probe{ln: ln, buf: make([]byte, 1), req: make(chan struct{}), resp: make(chan struct{})}
	p.wg.Go(func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer func() { _ = c.Close() }()
		_, _ = io.Copy(c, c) // echo until the client closes
	})
	p.wg.Go(func() {
		for range p.req {
			p.resp <- struct{}{}
		}
	})
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		p.close()
		return nil, err
	}
	p.conn = conn
	return p, nil
}

func (p *probe) tcpRoundTrip() (time.Duration, error) {
	start := time.Now()
	if _, err := p.conn.Write(p.buf); err != nil {
		return 0, err
	}
	if _, err := io.ReadFull(p.conn, p.buf); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

func (p *probe) chanRoundTrip() time.Duration {
	start := time.Now()
	p.req <- struct{}{}
	<-p.resp
	return time.Since(start)
}

func (p *probe) close() {
	if p.conn != nil {
		_ = p.conn.Close()
	}
	_ = p.ln.Close()
	close(p.req)
	p.wg.Wait()
}

func quantiles(ds []time.Duration) Quantiles {
	if len(ds) == 0 {
		return Quantiles{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[int(q*float64(len(s)-1))] }
	return Quantiles{P50: at(0.50), P90: at(0.90), P99: at(0.99)}
}

// WriteMarkdown writes one table row per result, after a header.
func WriteMarkdown(w io.Writer, results []Result) error {
	if len(results) == 0 {
		return errors.New("netpollfloor: no results")
	}
	o := results[0].Options
	if _, err := fmt.Fprintf(w, "Each busy goroutine burns %v of CPU, then parks on a shared gate that opens every %v. The probe alternates %d round trips of each kind, %v apart.\n\n"+
		"| busy goroutines | loopback TCP p50 | p90 | p99 | channels p50 | p90 | p99 | TCP p50 / channels p50 |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n",
		o.Work, o.GatePeriod, results[0].Samples, o.Pause); err != nil {
		return err
	}
	for _, r := range results {
		ratio := float64(r.TCP.P50) / float64(max(r.Chan.P50, 1))
		if _, err := fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %s | %s | %.0f× |\n", r.Options.Busy,
			ms(r.TCP.P50), ms(r.TCP.P90), ms(r.TCP.P99), ms(r.Chan.P50), ms(r.Chan.P90), ms(r.Chan.P99), ratio); err != nil {
			return err
		}
	}
	return nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond)) }
