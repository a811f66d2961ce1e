package stall

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// errorPause is how long a reader waits after a 5xx or a failed request
// before the next one, and after a 429 without Retry-After.
const errorPause = time.Second

// readerSet is Config.Clients readers listing Namespace with rv="".
type readerSet struct {
	cfg  Config
	t0   time.Time
	url  string
	rest *rest.Config

	// stop is closed to stop starting reads; wg waits for the reads in
	// flight.
	stop chan struct{}
	wg   sync.WaitGroup

	mu struct {
		sync.Mutex
		reads []Read
		// firstError keeps the first answer of each class but 2xx, for the
		// report.
		firstError map[string]string
	}
}

// startReaders starts the readers; t0 is the origin of Read.Start.
func startReaders(ctx context.Context, rc *rest.Config, cfg Config, t0 time.Time) (*readerSet, error) {
	rs := &readerSet{cfg: cfg, t0: t0, rest: rc, stop: make(chan struct{}),
		url: strings.TrimSuffix(rc.Host, "/") + "/api/v1/namespaces/" + Namespace + "/configmaps"}
	rs.mu.firstError = map[string]string{}
	for range cfg.Clients {
		hc, err := rs.client()
		if err != nil {
			close(rs.stop)
			rs.wg.Wait()
			return nil, err
		}
		rs.wg.Add(1)
		go func() {
			defer rs.wg.Done()
			rs.loop(ctx, hc)
		}()
	}
	return rs, nil
}

// client is one reader's HTTP client. A Dial of its own keeps client-go
// from sharing the transport, so that every reader has its own
// connection, as separate client processes would; compression is off, as
// it would dominate the CPU of a loopback benchmark.
func (rs *readerSet) client() (*http.Client, error) {
	rc := rest.CopyConfig(rs.rest)
	rc.DisableCompression = true
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	rc.Dial = d.DialContext
	rt, err := rest.TransportFor(rc)
	if err != nil {
		return nil, fmt.Errorf("stall: reader transport: %w", err)
	}
	return &http.Client{Transport: rt, Timeout: rs.cfg.ReadTimeout}, nil
}

// finish stops starting reads, waits for the reads in flight and returns
// every read.
func (rs *readerSet) finish() []Read {
	close(rs.stop)
	rs.wg.Wait()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.mu.reads
}

func (rs *readerSet) firstErrors() map[string]string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.mu.firstError
}

func (rs *readerSet) loop(ctx context.Context, hc *http.Client) {
	var local []Read
	defer func() {
		rs.mu.Lock()
		rs.mu.reads = append(rs.mu.reads, local...)
		rs.mu.Unlock()
	}()
	for {
		select {
		case <-rs.stop:
			return
		case <-ctx.Done():
			return
		default:
		}
		r, pause, detail := rs.once(ctx, hc)
		local = append(local, r)
		if detail != "" {
			rs.mu.Lock()
			if _, ok := rs.mu.firstError[r.Class]; !ok {
				rs.mu.firstError[r.Class] = detail
			}
			rs.mu.Unlock()
		}
		if pause > 0 {
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-rs.stop:
			case <-ctx.Done():
			}
			t.Stop()
		}
	}
}

// once sends one LIST and reads the whole answer. It returns the record,
// how long to pause before the next read, and, for an answer other than
// 2xx, a line describing it.
func (rs *readerSet) once(ctx context.Context, hc *http.Client) (Read, time.Duration, string) {
	start := time.Now()
	r := Read{Start: start.Sub(rs.t0)}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rs.url, nil)
	if err != nil {
		r.Class = ClassOther
		return r, errorPause, err.Error()
	}
	req.Header.Set("Accept", "application/vnd.kubernetes.protobuf")
	resp, err := hc.Do(req)
	if err != nil {
		r.Took, r.Class = time.Since(start), ClassOther
		return r, errorPause, err.Error()
	}
	var head [300]byte
	n, _ := io.ReadFull(resp.Body, head[:])
	rest, err := io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	r.Took, r.Status, r.Bytes = time.Since(start), resp.StatusCode, int64(n)+rest
	r.Class = classOf(resp.StatusCode)
	if err != nil {
		r.Class = ClassOther // the answer broke off
		return r, errorPause, fmt.Sprintf("%s, body cut after %d bytes: %v", resp.Status, r.Bytes, err)
	}
	switch r.Class {
	case Class2xx:
		return r, 0, ""
	case Class429:
		return r, rs.retryAfter(resp.Header.Get("Retry-After")), fmt.Sprintf("%s Retry-After=%q: %s", resp.Status, resp.Header.Get("Retry-After"), printable(head[:n]))
	}
	return r, errorPause, fmt.Sprintf("%s: %s", resp.Status, printable(head[:n]))
}

// printable keeps the runs of at least 6 printable characters of a
// protobuf Status, where its message is, joined by spaces.
func printable(b []byte) string {
	var out []string
	start := -1
	for i := 0; i <= len(b); i++ {
		if i < len(b) && b[i] >= 0x20 && b[i] < 0x7f {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 && i-start >= 6 {
			out = append(out, string(b[start:i]))
		}
		start = -1
	}
	return strings.Join(out, " ")
}

// retryAfter is the pause a 429's Retry-After header asks for, capped by
// Config.MaxRetryAfter; errorPause when absent or unreadable.
func (rs *readerSet) retryAfter(h string) time.Duration {
	s, err := strconv.Atoi(strings.TrimSpace(h))
	if err != nil || s < 0 {
		return errorPause
	}
	return min(time.Duration(s)*time.Second, rs.cfg.MaxRetryAfter)
}
