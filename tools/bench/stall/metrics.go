package stall

// The few series the run reads from the apiserver's and etcd's /metrics.

import (
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/freshcache/freshcache/tools/bench/promtext"
)

const (
	// freshcache's reads that needed freshness, by outcome.
	freshReadsMetric = "apiserver_freshcache_reads_total"
	// freshcache's objects covered by fallback reads in flight.
	freshFallbackObjects = "apiserver_freshcache_fallback_objects_in_flight"
	// upstream's consistent LISTs, by success and fallback.
	upstreamConsistentReads = "apiserver_watch_cache_consistent_read_total"
)

var (
	apiMetricNames  = []string{freshReadsMetric, freshFallbackObjects, upstreamConsistentReads}
	etcdMetricNames = []string{"etcd_network_client_grpc_sent_bytes_total", "grpc_server_started_total", "grpc_server_handled_total"}
)

// Outcomes of a consistent LIST, common to both implementations.
const (
	OutcomeCache      = "cache"       // served from the cache
	OutcomeFallback   = "fallback"    // sent to etcd after the timeout
	OutcomeRejected   = "rejected"    // 429 after the timeout
	OutcomeOverBudget = "over_budget" // freshcache: 429, the fallback budget was spent
	OutcomeError      = "error"       // ended otherwise
)

// parseLines parses Prometheus sample lines (no HELP or TYPE needed).
func parseLines(lines []string) map[string]*dto.MetricFamily {
	mfs, err := promtext.Parse(strings.NewReader(strings.Join(lines, "\n") + "\n"))
	if err != nil {
		return nil
	}
	return mfs
}

// value reads an untyped, counter or gauge sample.
func value(m *dto.Metric) float64 {
	switch {
	case m.GetUntyped() != nil:
		return m.GetUntyped().GetValue()
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}

func isConfigMaps(m *dto.Metric) bool {
	return promtext.Label(m, "resource") == "configmaps" && promtext.Label(m, "group") == ""
}

// apiserverReads reduces an apiserver scrape to consistent LISTs of
// configmaps by outcome, and freshcache's fallback objects in flight.
func apiserverReads(lines []string) (map[string]float64, float64) {
	reads := map[string]float64{}
	var inFlight float64
	for name, mf := range parseLines(lines) {
		for _, m := range mf.GetMetric() {
			if !isConfigMaps(m) {
				continue
			}
			switch name {
			case freshReadsMetric:
				if promtext.Label(m, "verb") == "list" && promtext.Label(m, "requested") == "consistent" {
					reads[promtext.Label(m, "outcome")] += value(m)
				}
			case freshFallbackObjects:
				inFlight += value(m)
			case upstreamConsistentReads:
				reads[upstreamOutcome(promtext.Label(m, "success"), promtext.Label(m, "fallback"))] += value(m)
			}
		}
	}
	return reads, inFlight
}

// upstreamOutcome names upstream's (success, fallback) label pair.
func upstreamOutcome(success, fallback string) string {
	switch {
	case fallback == "true":
		return OutcomeFallback
	case fallback == "skipped":
		return OutcomeRejected
	case success == "true":
		return OutcomeCache
	}
	return OutcomeError
}

// etcdCounters reduces an etcd scrape to the bytes sent to clients and
// the Range and RangeStream RPCs in flight (kube-apiserver 1.37 lists
// through RangeStream when etcd has it).
func etcdCounters(lines []string) (sent, ranges float64) {
	for name, mf := range parseLines(lines) {
		for _, m := range mf.GetMetric() {
			method := promtext.Label(m, "grpc_method")
			isRange := method == "Range" || method == "RangeStream"
			switch {
			case name == "etcd_network_client_grpc_sent_bytes_total":
				sent += value(m)
			case name == "grpc_server_started_total" && isRange:
				ranges += value(m)
			case name == "grpc_server_handled_total" && isRange:
				ranges -= value(m)
			}
		}
	}
	return sent, ranges
}
