package stall

import (
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/freshcache/freshcache/tools/bench/quantile"
	"github.com/freshcache/freshcache/tools/bench/report"
)

// Timeline are the moments of one configuration's run, as offsets from
// the start of its load.
type Timeline struct {
	// SteadyFrom starts the pre-stall window (after the warm-up),
	// StallAt is the SIGSTOP, ResumeAt the SIGCONT, End the moment the
	// readers stopped starting reads.
	SteadyFrom, StallAt, ResumeAt, End time.Duration
}

// MarshalJSON shows the moments in milliseconds.
func (t Timeline) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		SteadyFrom Millis `json:"steady_from_ms"`
		StallAt    Millis `json:"stall_at_ms"`
		ResumeAt   Millis `json:"resume_at_ms"`
		End        Millis `json:"end_ms"`
	}{millis(t.SteadyFrom), millis(t.StallAt), millis(t.ResumeAt), millis(t.End)})
}

// ConfigResult is one configuration's run. Sizes are in bytes; JSON shows
// times in milliseconds.
type ConfigResult struct {
	Name string   `json:"name"`
	Args []string `json:"args"`
	// Skipped says why it did not run (kube-apiserver refused a flag);
	// Error why it stopped early. Neither: it ran to the end.
	Skipped string `json:"skipped,omitempty"`
	Error   string `json:"error,omitempty"`

	Timeline Timeline `json:"timeline"`
	// APIServer and Etcd are the RSS levels around the stall; the HWMs
	// are VmHWM at the end (peak since the process started, loading
	// included).
	APIServer    Level `json:"apiserver_rss"`
	Etcd         Level `json:"etcd_rss"`
	APIServerHWM int64 `json:"apiserver_hwm_bytes"`
	EtcdHWM      int64 `json:"etcd_hwm_bytes"`

	// Reads counts the reads started from SteadyFrom to End; Steady and
	// FromStall split them at StallAt.
	Reads     Counts `json:"reads"`
	Steady    Counts `json:"steady"`
	FromStall Counts `json:"from_stall"`
	// Latencies of 2xx reads: p50 and p99 of the steady window, p99 of
	// the reads started from StallAt on.
	P50Steady     Millis `json:"p50_steady_ms"`
	P99Steady     Millis `json:"p99_steady_ms"`
	P99FromStall  Millis `json:"p99_from_stall_ms"`
	P99All        Millis `json:"p99_all_ms"`
	AnsweredBytes int64  `json:"answered_bytes"`
	// Recovery is the time from SIGCONT until reads were back to the
	// pre-stall level (recovery()); nil when they never were before End.
	Recovery          *Millis `json:"recovery_ms,omitempty"`
	RecoveryThreshold Millis  `json:"recovery_threshold_ms"`

	// OutcomesSteady and OutcomesFromStall are the apiserver's own count
	// of consistent LISTs by outcome over the two windows (metric deltas).
	OutcomesSteady    map[string]float64 `json:"outcomes_steady,omitempty"`
	OutcomesFromStall map[string]float64 `json:"outcomes_from_stall,omitempty"`
	// PeakFallbackObjects is freshcache's fallback_objects_in_flight at
	// its highest; PeakEtcdRanges the most Range RPCs etcd had in flight
	// at one scrape (the apiserver scraped every 2 s, etcd every 250 ms).
	PeakFallbackObjects float64 `json:"peak_fallback_objects"`
	PeakEtcdRanges      float64 `json:"peak_etcd_ranges_in_flight"`
	// EtcdSentSteady and EtcdSentFromStall are the bytes etcd sent its
	// clients over each window.
	EtcdSentSteady    float64 `json:"etcd_sent_steady_bytes"`
	EtcdSentFromStall float64 `json:"etcd_sent_from_stall_bytes"`

	Writes       int64             `json:"writes"`
	WritesFailed int64             `json:"writes_failed"`
	FirstErrors  map[string]string `json:"first_errors,omitempty"`

	// Samples and Metrics are the RSS and metric samples, thinned to about
	// one a second (thinSamples, thinMetrics).
	Samples []Sample       `json:"rss_samples,omitempty"`
	Metrics []MetricSample `json:"metric_samples,omitempty"`
	// PerSecond buckets the reads by the second they started in.
	PerSecond []SecondBucket `json:"per_second,omitempty"`
}

// Millis is a duration that JSON shows in milliseconds.
type Millis float64

func millis(d time.Duration) Millis { return Millis(float64(d) / float64(time.Millisecond)) }

// SecondBucket is the reads that started in one second of the run.
type SecondBucket struct {
	Second int    `json:"s"`
	Counts Counts `json:"counts"`
	P50    Millis `json:"p50_ms"`
}

// Result is a whole run.
type Result struct {
	When        time.Time      `json:"when"`
	Commit      string         `json:"commit"`
	Command     string         `json:"command"`
	Machine     report.Machine `json:"machine"`
	Config      Config         `json:"config"`
	DataBytes   int64          `json:"data_bytes"`
	Notes       []string       `json:"notes,omitempty"`
	Configs     []ConfigResult `json:"configurations"`
	Ratios      Ratios         `json:"ratios"`
	ClosingLine string         `json:"closing_line"`
}

// summarize fills r's measured fields from what the run recorded.
func summarize(r *ConfigResult, tl Timeline, reads []Read, samples []Sample, metrics []MetricSample) {
	r.Timeline = tl
	r.APIServer, r.Etcd = levels(samples, tl.SteadyFrom, tl.StallAt, tl.End)
	r.Reads = countIn(reads, tl.SteadyFrom, tl.End+1)
	r.Steady = countIn(reads, tl.SteadyFrom, tl.StallAt)
	r.FromStall = countIn(reads, tl.StallAt, tl.End+1)
	steady := okLatencies(reads, tl.SteadyFrom, tl.StallAt)
	r.P50Steady, r.P99Steady = millis(quantile.Percentile(steady, 50)), millis(quantile.Percentile(steady, 99))
	r.P99FromStall = millis(quantile.Percentile(okLatencies(reads, tl.StallAt, tl.End+1), 99))
	r.P99All = millis(quantile.Percentile(okLatencies(reads, tl.SteadyFrom, tl.End+1), 99))
	for _, rd := range reads {
		if rd.Class == Class2xx && rd.Start >= tl.SteadyFrom {
			r.AnsweredBytes += rd.Bytes
		}
	}
	threshold := quantile.Percentile(steady, 99)
	r.RecoveryThreshold = millis(threshold)
	if len(steady) > 0 {
		if d, ok := recovery(reads, tl.ResumeAt, threshold); ok {
			m := millis(d)
			r.Recovery = &m
		}
	}
	r.OutcomesSteady = outcomeDelta(metrics, tl.SteadyFrom, tl.StallAt)
	r.OutcomesFromStall = outcomeDelta(metrics, tl.StallAt, tl.End+time.Hour)
	for _, m := range metrics {
		if m.At < tl.StallAt {
			continue
		}
		r.PeakFallbackObjects = max(r.PeakFallbackObjects, m.FallbackObjects)
		if m.EtcdOK {
			r.PeakEtcdRanges = max(r.PeakEtcdRanges, m.EtcdRangesInFlight)
		}
	}
	r.EtcdSentSteady = etcdSentDelta(metrics, tl.SteadyFrom, tl.StallAt)
	r.EtcdSentFromStall = etcdSentDelta(metrics, tl.StallAt, tl.End+time.Hour)
	r.PerSecond = perSecond(reads)
}

// outcomeDelta is the change of the apiserver's outcome counters between
// the last good scrape before from and the last good one before to.
func outcomeDelta(ms []MetricSample, from, to time.Duration) map[string]float64 {
	var a, b map[string]float64
	for _, m := range ms {
		if m.Reads == nil {
			continue
		}
		if m.At < from {
			a = m.Reads
		}
		if m.At < to {
			b = m.Reads
		}
	}
	if b == nil {
		return nil
	}
	out := maps.Clone(b)
	for k, v := range a {
		out[k] -= v
	}
	for k, v := range out {
		if v == 0 {
			delete(out, k)
		}
	}
	return out
}

// etcdSentDelta is the bytes etcd sent between the last answered scrape
// before from and the last one before to.
func etcdSentDelta(ms []MetricSample, from, to time.Duration) float64 {
	var a, b float64
	var haveA, haveB bool
	for _, m := range ms {
		if !m.EtcdOK {
			continue
		}
		if m.At < from {
			a, haveA = m.EtcdSentBytes, true
		}
		if m.At < to {
			b, haveB = m.EtcdSentBytes, true
		}
	}
	if !haveA || !haveB {
		return 0
	}
	return b - a
}

// perSecond buckets reads by the second they started in.
func perSecond(reads []Read) []SecondBucket {
	byS := map[int]*SecondBucket{}
	lat := map[int][]time.Duration{}
	last := -1
	for _, r := range reads {
		s := int(r.Start / time.Second)
		if byS[s] == nil {
			byS[s] = &SecondBucket{Second: s}
		}
		byS[s].Counts.add(r.Class)
		if r.Class == Class2xx {
			lat[s] = append(lat[s], r.Took)
		}
		last = max(last, s)
	}
	var out []SecondBucket
	for s := 0; s <= last; s++ {
		b := byS[s]
		if b == nil {
			b = &SecondBucket{Second: s}
		}
		l := lat[s]
		slices.Sort(l)
		b.P50 = millis(quantile.Percentile(l, 50))
		out = append(out, *b)
	}
	return out
}

// thinSamples keeps, of each second, the sample with the highest
// apiserver RSS (the report's peaks come from every sample; the JSON keeps
// one a second).
func thinSamples(samples []Sample) []Sample {
	var out []Sample
	for _, s := range samples {
		n := len(out)
		if n > 0 && out[n-1].At/time.Second == s.At/time.Second {
			if s.APIServer > out[n-1].APIServer {
				out[n-1] = s
			}
			continue
		}
		out = append(out, s)
	}
	return out
}

// thinMetrics keeps every apiserver sample, and of etcd's the one with
// the most Range RPCs in flight in each second (the failed ones of a
// second only when none answered).
func thinMetrics(ms []MetricSample) []MetricSample {
	var out []MetricSample
	last := -1 // index in out of the etcd sample of the current second
	for _, m := range ms {
		isEtcd := m.Reads == nil && m.FallbackObjects == 0
		if !isEtcd {
			out = append(out, m)
			continue
		}
		if last >= 0 && out[last].At/time.Second == m.At/time.Second {
			cur := out[last]
			if (m.EtcdOK && !cur.EtcdOK) || (m.EtcdOK == cur.EtcdOK && m.EtcdRangesInFlight > cur.EtcdRangesInFlight) {
				out[last] = m
			}
			continue
		}
		out = append(out, m)
		last = len(out) - 1
	}
	return out
}
