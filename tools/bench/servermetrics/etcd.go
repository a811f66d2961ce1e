package servermetrics

import (
	dto "github.com/prometheus/client_model/go"

	"github.com/freshcache/freshcache/tools/bench/promtext"
)

// EtcdCounters are an etcd server's gRPC counters (go-grpc-middleware's
// grpc_server_*): from its /metrics, or from the Prometheus default
// registry, which an embedded server shares with this process.
type EtcdCounters struct {
	// Ranges counts Range RPCs: GET and LIST, and the linearizable
	// revision requests of consistent reads (a Range with count only).
	Ranges float64 `json:"ranges"`
	// RangeStreams counts RangeStream RPCs (etcd 3.7's streamed range,
	// which the etcd3 store uses for LISTs).
	RangeStreams float64 `json:"range_streams"`
	// Txns counts Txn RPCs (registry writes; the harness writes with Put).
	Txns float64 `json:"txns"`
	// WatchMsgs counts messages clients sent on Watch streams: watch
	// creations, cancellations and progress requests.
	WatchMsgs float64 `json:"watch_msgs"`
	// Puts counts Put RPCs: the harness's own writes, left out of Reads.
	Puts float64 `json:"puts"`
}

// Requests is every etcd request the backend caused: Ranges +
// RangeStreams + Txns + WatchMsgs. The harness's Puts are excluded.
func (c EtcdCounters) Requests() float64 { return c.Ranges + c.RangeStreams + c.Txns + c.WatchMsgs }

// Sub is c - o, counter by counter: what happened between two readings.
func (c EtcdCounters) Sub(o EtcdCounters) EtcdCounters {
	return EtcdCounters{Ranges: c.Ranges - o.Ranges, RangeStreams: c.RangeStreams - o.RangeStreams, Txns: c.Txns - o.Txns, WatchMsgs: c.WatchMsgs - o.WatchMsgs, Puts: c.Puts - o.Puts}
}

// EtcdCountersFrom reads the counters from an etcd server's families.
func EtcdCountersFrom(mfs []*dto.MetricFamily) EtcdCounters {
	var c EtcdCounters
	for _, mf := range mfs {
		switch mf.GetName() {
		case "grpc_server_started_total":
			for _, m := range mf.GetMetric() {
				if promtext.Label(m, "grpc_service") != "etcdserverpb.KV" {
					continue
				}
				switch promtext.Label(m, "grpc_method") {
				case "Range":
					c.Ranges += m.GetCounter().GetValue()
				case "RangeStream":
					c.RangeStreams += m.GetCounter().GetValue()
				case "Txn":
					c.Txns += m.GetCounter().GetValue()
				case "Put":
					c.Puts += m.GetCounter().GetValue()
				}
			}
		case "grpc_server_msg_received_total":
			for _, m := range mf.GetMetric() {
				if promtext.Label(m, "grpc_service") == "etcdserverpb.Watch" && promtext.Label(m, "grpc_method") == "Watch" {
					c.WatchMsgs += m.GetCounter().GetValue()
				}
			}
		}
	}
	return c
}
