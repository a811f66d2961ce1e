package stall

// The pure arithmetic of a run: read classes, RSS levels (medians from
// package quantile), growth and recovery. Nothing here reads a clock or
// does I/O.

import (
	"encoding/json"
	"slices"
	"sort"
	"time"

	"github.com/freshcache/freshcache/tools/bench/quantile"
)

// Classes of a read's answer.
const (
	Class2xx   = "2xx"
	Class429   = "429"
	Class5xx   = "5xx"
	ClassOther = "other" // any other status, a client timeout, a broken connection
)

// classOf is the class of an HTTP status; 0 means no answer.
func classOf(status int) string {
	switch {
	case status >= 200 && status < 300:
		return Class2xx
	case status == 429:
		return Class429
	case status >= 500 && status < 600:
		return Class5xx
	}
	return ClassOther
}

// Read is one LIST a reader sent. Times are offsets from the start of the
// configuration's load (the start of the warm-up).
type Read struct {
	Start time.Duration
	Took  time.Duration
	// Status is the HTTP status, 0 when no answer came.
	Status int
	Class  string
	Bytes  int64
}

// Sample is one RSS reading of both processes, in bytes; 0 when the read
// failed.
type Sample struct {
	At        time.Duration `json:"-"`
	APIServer int64         `json:"apiserver_rss"`
	Etcd      int64         `json:"etcd_rss"`
}

// MarshalJSON shows At in milliseconds.
func (s Sample) MarshalJSON() ([]byte, error) {
	type plain Sample
	return json.Marshal(struct {
		At Millis `json:"at_ms"`
		plain
	}{millis(s.At), plain(s)})
}

// growth is peak/pre; 0 when pre is unknown.
func growth(peak, pre int64) float64 {
	if pre <= 0 {
		return 0
	}
	return float64(peak) / float64(pre)
}

// Level is one process's RSS around a stall, in bytes.
type Level struct {
	// Pre is the median over the steady window, Peak the maximum from the
	// stall's start to the end of the observation.
	Pre    int64   `json:"pre_bytes"`
	Peak   int64   `json:"peak_bytes"`
	Growth float64 `json:"growth"`
}

// levels computes both processes' Level: the steady window is
// [steadyFrom, stallAt), the peak is taken over [stallAt, end]. Failed
// readings (0) are left out.
func levels(samples []Sample, steadyFrom, stallAt, end time.Duration) (api, etcd Level) {
	var preAPI, preEtcd []int64
	for _, s := range samples {
		switch {
		case s.At >= steadyFrom && s.At < stallAt:
			if s.APIServer > 0 {
				preAPI = append(preAPI, s.APIServer)
			}
			if s.Etcd > 0 {
				preEtcd = append(preEtcd, s.Etcd)
			}
		case s.At >= stallAt && s.At <= end:
			api.Peak = max(api.Peak, s.APIServer)
			etcd.Peak = max(etcd.Peak, s.Etcd)
		}
	}
	api.Pre, etcd.Pre = quantile.Median(preAPI), quantile.Median(preEtcd)
	api.Growth, etcd.Growth = growth(api.Peak, api.Pre), growth(etcd.Peak, etcd.Pre)
	return api, etcd
}

// Counts are reads by class.
type Counts struct {
	OK     int `json:"2xx"`
	Retry  int `json:"429"`
	Err5xx int `json:"5xx"`
	Other  int `json:"other"`
}

func (c *Counts) add(class string) {
	switch class {
	case Class2xx:
		c.OK++
	case Class429:
		c.Retry++
	case Class5xx:
		c.Err5xx++
	default:
		c.Other++
	}
}

// Total is every read counted.
func (c Counts) Total() int { return c.OK + c.Retry + c.Err5xx + c.Other }

// Lost are the reads neither answered nor told to retry.
func (c Counts) Lost() int { return c.Err5xx + c.Other }

// countIn counts the reads that started in [from, to).
func countIn(reads []Read, from, to time.Duration) Counts {
	var c Counts
	for _, r := range reads {
		if r.Start >= from && r.Start < to {
			c.add(r.Class)
		}
	}
	return c
}

// okLatencies are the sorted latencies of the 2xx reads that started in
// [from, to).
func okLatencies(reads []Read, from, to time.Duration) []time.Duration {
	var out []time.Duration
	for _, r := range reads {
		if r.Class == Class2xx && r.Start >= from && r.Start < to {
			out = append(out, r.Took)
		}
	}
	slices.Sort(out)
	return out
}

// recoveryRun is how many reads in a row must be back to the pre-stall
// level for the cache to count as serving again.
const recoveryRun = 5

// recovery is the time from resume until the start of the first run of
// recoveryRun reads (in order of their start, all started at or after
// resume) that were each answered 2xx within threshold. ok is false when
// no such run exists.
func recovery(reads []Read, resume, threshold time.Duration) (d time.Duration, ok bool) {
	var after []Read
	for _, r := range reads {
		if r.Start >= resume {
			after = append(after, r)
		}
	}
	sort.SliceStable(after, func(i, j int) bool { return after[i].Start < after[j].Start })
	run := 0
	for i, r := range after {
		if r.Class != Class2xx || r.Took > threshold {
			run = 0
			continue
		}
		run++
		if run == recoveryRun {
			return after[i-recoveryRun+1].Start - resume, true
		}
	}
	return 0, false
}
