package plan

// Wait describes the freshness wait of one read that a Fresh or NotOlder
// plan sent to wait.
type Wait struct {
	Verb Verb
	// Consistent: the read waits for a revision fetched after it arrived
	// (rv="", or rv=0 under FreshResourceVersionZero without a recent
	// revision). Otherwise it waits for a revision it knows.
	Consistent bool
	// Bounded: an rv=0 read served at a revision that a request sent
	// within ZeroReadStaleness was answered with. It waits as a
	// NotOlderThan read does and ends as a consistent read would.
	Bounded bool
	// Zero: the read asked for resourceVersion=0.
	Zero bool
	// Reject: the cache's TimeoutAction is TimeoutReject.
	Reject bool
}

// Ending is how a freshness wait ended.
type Ending uint8

// The endings.
const (
	Released    Ending = iota + 1 // the cache reached the revision
	FetchFailed                   // the revision fetch failed
	TimedOut                      // ConsistentReadTimeout passed
	// TimedOutCatchingUp: ConsistentReadTimeout passed with the read's
	// revision known (etcd answered) and the cache nearer to it than when
	// the wait (or its last extension) began: the cache is behind because
	// it is busy applying events, not because its watch stopped.
	TimedOutCatchingUp
)

// Outcome is what the cache does with a read once its wait ended.
type Outcome uint8

// The outcomes.
const (
	// ServeCache: serve from a snapshot taken from now on.
	ServeCache Outcome = iota + 1
	// ServeEtcd: delegate with rv="" (a quorum read), through the
	// fallback budget.
	ServeEtcd
	// FailWithFetchError: the fetch's own error, as upstream's watch
	// fails when it cannot read etcd's revision.
	FailWithFetchError
	// TooManyRequests: 429 with Retry-After.
	TooManyRequests
	// TooLargeForRead: TooLargeResourceVersion at the revision the read
	// asked for.
	TooLargeForRead
	// TooLargeForTarget: TooLargeResourceVersion at the revision the wait
	// fetched.
	TooLargeForTarget
	// WaitAgain: wait another ConsistentReadTimeout for the same revision.
	WaitAgain
)

func (o Outcome) String() string {
	switch o {
	case ServeCache:
		return "ServeCache"
	case ServeEtcd:
		return "ServeEtcd"
	case FailWithFetchError:
		return "FailWithFetchError"
	case TooManyRequests:
		return "TooManyRequests"
	case TooLargeForRead:
		return "TooLargeForRead"
	case TooLargeForTarget:
		return "TooLargeForTarget"
	case WaitAgain:
		return "WaitAgain"
	}
	return "Outcome(?)"
}

// Patient reports whether the read waits for its revision for as long as
// its context lasts, through fetches that go unanswered, before
// ConsistentReadTimeout starts for the cache: a consistent WATCH, unless
// the operator asked for bounded waits (TimeoutReject). It is how
// upstream's cacher waits for a watch (it reads etcd's revision under the
// watch's context, then gives the cache 3 s); failing fast instead would
// send a watch-list client to its fallback, an rv=0 LIST the cache would
// answer as it is.
func (w Wait) Patient() bool {
	return w.Verb == Watch && w.Consistent && !w.Reject
}

// After is the policy that turns a wait's ending into what the read gets.
// Nothing here is stale: a read is served from the cache only once the
// cache reached its revision, and from etcd only by a quorum read.
//
//   - A WATCH is never served by opening a watch on etcd: upstream's
//     cacher never does for a cached resource, and it would hold an etcd
//     watcher per client. A patient WATCH gets the fetch's error when the
//     fetch failed and TooLargeResourceVersion (with Retry-After) at its
//     fetched revision when the cache did not reach it in time; under
//     TimeoutReject it gets 429, which client-go's reflector retries
//     without falling back to an rv=0 LIST.
//   - A NotOlderThan read (rv=N) that times out gets
//     TooLargeResourceVersion, as upstream.
//   - An rv=0 LIST never falls back to etcd: upstream's cacher never sends
//     one there, and etcd has no field index, so one node's pods would be
//     a range over every pod, sent when etcd or the apiserver is slow
//     already. It gets 429, which clients of rv=0 LISTs handle (upstream
//     answers it while its cache is not ready). An rv=0 GET still falls
//     back: one key, what a GET at rv="" costs upstream every time.
//   - An rv=0 LIST whose cache was catching up when its timeout passed
//     waits another timeout, as long as the cache keeps moving and its
//     request lasts: its revision is known, so etcd answered and the
//     wait is load (a restart storm's watches starting on a busy
//     apiserver), which a 429 and a retry would only add to. A cache that
//     did not move in a whole timeout gets 429 as before, and under
//     TimeoutReject every wait stays bounded. Any other read that was
//     catching up ends as a timeout.
//   - Otherwise a failed fetch or a timeout falls back to etcd, or gets
//     429 under TimeoutReject, so that a struggling etcd is not handed
//     every read at once.
func (w Wait) After(e Ending) Outcome {
	zeroList := w.Verb == List && w.Zero
	switch e {
	case Released:
		return ServeCache
	case TimedOutCatchingUp:
		if zeroList && !w.Reject && (w.Consistent || w.Bounded) {
			return WaitAgain
		}
	case FetchFailed:
		switch {
		case w.Verb == Watch && !w.Reject:
			return FailWithFetchError
		case w.Reject || zeroList:
			return TooManyRequests
		}
		return ServeEtcd
	}
	switch {
	case !w.Consistent && !w.Bounded:
		return TooLargeForRead
	case w.Reject || zeroList:
		return TooManyRequests
	case w.Verb == Watch:
		return TooLargeForTarget
	}
	return ServeEtcd
}
