package metrics

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	compbasemetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

const (
	namespace = "apiserver"
	subsystem = "freshcache"
)

var labels = []string{"group", "resource"}

var (
	resourceVersion    = compbasemetrics.NewGaugeVec(gaugeOpts("resource_version", "Cache revision: every event up to it has been applied."), labels)
	eventsReceived     = compbasemetrics.NewCounterVec(counterOpts("events_received_total", "Watch events received from etcd by the cache."), labels)
	watchers           = compbasemetrics.NewGaugeVec(gaugeOpts("watchers", "Watchers currently served by the cache."), labels)
	terminatedWatchers = compbasemetrics.NewCounterVec(counterOpts("terminated_watchers_total", "Watchers the cache closed because they did not keep up (reason=slow) or because it relisted (reason=relist)."), labelsAnd("reason"))
	revisionsCompleted = compbasemetrics.NewCounterVec(counterOpts("revisions_completed_total", "Revisions the cache held until something proved them whole (etcd gives every key of a transaction one revision), by what did: a later event (by=event), a progress notification (by=progress) or this apiserver's own single-key write of it (by=own_write). Only progress costs a round trip to etcd."), []string{"group", "resource", "by"})
	relists            = compbasemetrics.NewCounterVec(counterOpts("relists_total", "Full lists from etcd done by the cache, by why: initial (the first), compacted (the watch's revision was compacted), error (a list, watch or apply failed for good), retry_budget (transient watch errors outlasted the retry budget), inconsistent (the inconsistency detector found the cache differs from etcd), moved_past_event (an event arrived at a revision the cache had been moved past by its own writes' ledger without it: that proof was wrong; any increase is a bug or a broken assumption)."), labelsAnd("reason"))

	catchUp = compbasemetrics.NewHistogramVec(histogramOpts("catch_up_seconds", "Time from the first of a run of transient watch errors (etcd lost its leader, was overloaded or unreachable) until the cache's watch delivered again, without a relist.", []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}), labels)

	watchRetries      = compbasemetrics.NewCounterVec(counterOpts("watch_retries_total", "Times the cache watched etcd again from its own revision after a transient watch error (etcd lost its leader, was overloaded or unreachable), keeping its history and watchers instead of relisting."), labels)
	protocolErrors    = compbasemetrics.NewCounterVec(counterOpts("protocol_errors_total", "Inputs the freshness state machine refused: the cache's driver broke one of its duties. Any increase is a bug (the read it concerned is resolved by its deadline)."), labels)
	consistencyChecks = compbasemetrics.NewCounterVec(counterOpts("consistency_checks_total", "Rounds of the inconsistency detector, which compares the cache with etcd at the cache's revision, by result: match, mismatch (the cache was purged and relisted), skipped (the cache was not ready, or etcd had compacted the revision) or error (etcd could not be listed)."), labelsAnd("result"))
	inconsistencies   = compbasemetrics.NewCounterVec(counterOpts("inconsistencies_total", "Times the inconsistency detector found the cache's objects differ from etcd's at the same revision. Any increase is a bug: the cache was purged and relisted."), labels)

	registerOnce sync.Once
)

// Register adds the metrics to the legacy registry. It is idempotent.
func Register() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(resourceVersion, eventsReceived, watchers, terminatedWatchers, revisionsCompleted, relists, watchRetries, catchUp, protocolErrors, consistencyChecks, inconsistencies)
	})
}

// Termination reasons for WatcherTerminated.
const (
	ReasonSlow   = "slow"
	ReasonRelist = "relist"
)

// Relist reasons for Relisted.
const (
	RelistInitial      = "initial"
	RelistCompacted    = "compacted"
	RelistError        = "error"
	RelistRetryBudget  = "retry_budget"
	RelistInconsistent = "inconsistent"
	// RelistMovedPastEvent: an event arrived at a revision that the
	// reflector had not received but the cache had been moved past from
	// outside it (the catch-up on the ledger of own writes), so the proof
	// behind that move was wrong. Any increase is a bug or a broken
	// assumption (one key per transaction, an etcd that never goes back).
	RelistMovedPastEvent = "moved_past_event"
)

// What proved a held revision whole, for RevisionCompleted.
const (
	// CompletedByEvent: an event of a later revision arrived.
	CompletedByEvent = "event"
	// CompletedByProgress: a progress notification at or beyond it.
	CompletedByProgress = "progress"
	// CompletedByOwnWrite: this apiserver's own single-key write
	// committed it.
	CompletedByOwnWrite = "own_write"
)

// Results for ConsistencyChecked.
const (
	CheckMatch    = "match"
	CheckMismatch = "mismatch"
	CheckSkipped  = "skipped"
	CheckError    = "error"
)

// Recorder receives the cache's measurements for one resource. Every method
// must be cheap and safe for concurrent use.
type Recorder interface {
	// ResourceVersion is the new cache revision.
	ResourceVersion(rv uint64)
	// EventsReceived counts events received from etcd.
	EventsReceived(n int)
	// WatchersDelta adds delta (positive or negative) to the watcher gauge.
	WatchersDelta(delta int)
	// WatcherTerminated counts one watcher closed by the cache.
	WatcherTerminated(reason string)
	// Relisted counts one full list from etcd, by reason (Relist*).
	Relisted(reason string)
	// WatchRetried counts one re-watch from the cache's revision after a
	// transient watch error.
	WatchRetried()
	// CaughtUp observes, once a watch delivers again (an event or a
	// progress notification) after a run of transient watch errors, the
	// time since the first of them.
	CaughtUp(d time.Duration)
	// RevisionCompleted counts one revision the reflector held, reading
	// etcd through the etcd3 store, until something proved it whole, by
	// what did (CompletedBy*).
	RevisionCompleted(by string)
	// ProtocolError counts one input the freshness Machine refused (a bug
	// of the driver).
	ProtocolError()
	// ConsistencyChecked counts one round of the inconsistency detector,
	// by result (Check*). A CheckMismatch is also an inconsistency.
	ConsistencyChecked(result string)

	// ReadWait observes the freshness wait of one read (verb: VerbList,
	// VerbGet, VerbWatch; requested: Requested*).
	ReadWait(verb, requested string, d time.Duration)
	// ReadReleased observes, for a read served from the cache, the part of
	// its wait until the freshness protocol released it; the rest of
	// ReadWait's d is the reader's wait for a CPU.
	ReadReleased(verb, requested string, d time.Duration)
	// Read counts one read that needed freshness, by outcome (Outcome*).
	Read(verb, requested, outcome string)
	// ReadWaitExtended counts one more ConsistentReadTimeout an rv=0 LIST
	// waited because the cache was catching up with its revision.
	ReadWaitExtended(verb, requested string)
	// FallbackInFlight is the number of objects the reads falling back to
	// etcd after a freshness timeout cover, now.
	FallbackInFlight(objects int64)
	// ProgressRequest counts one progress request sent to etcd.
	ProgressRequest()
	// ProgressStalled counts one progress request that no notification
	// answered within the stall time (etcd drops a request while a watch
	// on the stream is catching up), so that another was asked for.
	ProgressStalled()
	// AdvancedByOwnWrites counts one time the cache caught up with a
	// read's revision without a progress request: every revision in
	// between was this process's own write of another resource.
	AdvancedByOwnWrites()
	// ConsistentReadsDisabled records that the cache delegates its
	// consistent reads to etcd, and why (e.g. ReasonEtcdVersion).
	ConsistentReadsDisabled(reason string)
}

// For returns the component-base Recorder for gr, registering the metrics on
// first use.
func For(gr schema.GroupResource) Recorder {
	Register()
	registerRead()
	return &legacy{group: gr.Group, resource: gr.Resource,
		progress: progressRequests.WithLabelValues(gr.Group, gr.Resource),
		stalls:   progressStalls.WithLabelValues(gr.Group, gr.Resource),
		advances: ownWriteAdvances.WithLabelValues(gr.Group, gr.Resource),
		rv:       resourceVersion.WithLabelValues(gr.Group, gr.Resource),
		events:   eventsReceived.WithLabelValues(gr.Group, gr.Resource),
		watchers: watchers.WithLabelValues(gr.Group, gr.Resource),
		// Created now, so that the series exists at 0 and an alert on its
		// increase fires on the first inconsistency.
		inconsistent: inconsistencies.WithLabelValues(gr.Group, gr.Resource),
		// One per revision held: looked up once.
		completed: map[string]compbasemetrics.CounterMetric{
			CompletedByEvent:    revisionsCompleted.WithLabelValues(gr.Group, gr.Resource, CompletedByEvent),
			CompletedByProgress: revisionsCompleted.WithLabelValues(gr.Group, gr.Resource, CompletedByProgress),
			CompletedByOwnWrite: revisionsCompleted.WithLabelValues(gr.Group, gr.Resource, CompletedByOwnWrite),
		},
	}
}

type legacy struct {
	group, resource string
	rv              compbasemetrics.GaugeMetric
	events          compbasemetrics.CounterMetric
	watchers        compbasemetrics.GaugeMetric
	progress        compbasemetrics.CounterMetric
	stalls          compbasemetrics.CounterMetric
	advances        compbasemetrics.CounterMetric
	inconsistent    compbasemetrics.CounterMetric
	completed       map[string]compbasemetrics.CounterMetric
}

func (l *legacy) ResourceVersion(rv uint64) { l.rv.Set(float64(rv)) }
func (l *legacy) EventsReceived(n int)      { l.events.Add(float64(n)) }
func (l *legacy) WatchersDelta(delta int)   { l.watchers.Add(float64(delta)) }
func (l *legacy) WatchRetried()             { watchRetries.WithLabelValues(l.group, l.resource).Inc() }
func (l *legacy) ProtocolError()            { protocolErrors.WithLabelValues(l.group, l.resource).Inc() }
func (l *legacy) CaughtUp(d time.Duration) {
	catchUp.WithLabelValues(l.group, l.resource).Observe(d.Seconds())
}

// RevisionCompleted counts one held revision proven whole, by what did.
func (l *legacy) RevisionCompleted(by string) {
	if c, ok := l.completed[by]; ok {
		c.Inc()
		return
	}
	revisionsCompleted.WithLabelValues(l.group, l.resource, by).Inc()
}

func (l *legacy) Relisted(reason string) {
	relists.WithLabelValues(l.group, l.resource, reason).Inc()
}
func (l *legacy) ConsistencyChecked(result string) {
	consistencyChecks.WithLabelValues(l.group, l.resource, result).Inc()
	if result == CheckMismatch {
		l.inconsistent.Inc()
	}
}
func (l *legacy) WatcherTerminated(r string) {
	terminatedWatchers.WithLabelValues(l.group, l.resource, r).Inc()
}

// Discard is a Recorder that records nothing.
type Discard struct{}

// ResourceVersion records nothing.
func (Discard) ResourceVersion(uint64) {}

// EventsReceived records nothing.
func (Discard) EventsReceived(int) {}

// WatchersDelta records nothing.
func (Discard) WatchersDelta(int) {}

// WatcherTerminated records nothing.
func (Discard) WatcherTerminated(string) {}

// Relisted records nothing.
func (Discard) Relisted(string) {}

// RevisionCompleted records nothing.
func (Discard) RevisionCompleted(string) {}

// WatchRetried records nothing.
func (Discard) WatchRetried() {}

// ProtocolError records nothing.
func (Discard) ProtocolError() {}

// CaughtUp records nothing.
func (Discard) CaughtUp(time.Duration) {}

// FallbackInFlight records nothing.
func (Discard) FallbackInFlight(int64) {}

// ConsistencyChecked records nothing.
func (Discard) ConsistencyChecked(string) {}
