package listing

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/storage"

	"github.com/freshcache/watchcache/internal/plan"
	"github.com/freshcache/watchcache/internal/store"
)

// Request is a validated LIST.
type Request struct {
	// Key is the prepared key (a prefix ending in "/" when recursive).
	Key string
	// ContinueKey is where a continued list resumes, or "".
	ContinueKey string
	// RV is the request's resourceVersion, parsed; ContinueRV the
	// revision in its continue token (negative: a consistent list's).
	RV         uint64
	ContinueRV int64
}

// End is the exclusive end of the request's key range.
func (r Request) End(recursive bool) string {
	if !recursive {
		return r.Key + "\x00"
	}
	return store.PrefixEnd(r.Key)
}

// Plan is the request as the planner takes it.
func (r Request) Plan(opts storage.ListOptions) plan.Request {
	p := opts.Predicate
	return plan.Request{
		Verb:            plan.List,
		ResourceVersion: opts.ResourceVersion,
		RV:              r.RV,
		Match:           opts.ResourceVersionMatch,
		Limit:           p.Limit,
		Recursive:       opts.Recursive,
		Continue:        p.Continue,
		ContinueRV:      r.ContinueRV,
		Selective:       (p.Label != nil && !p.Label.Empty()) || (p.Field != nil && !p.Field.Empty()),
	}
}

// Parse validates a LIST as upstream does. Client mistakes come
// back as BadRequest; it never panics.
func Parse(prefix, key string, v storage.Versioner, opts storage.ListOptions) (Request, error) {
	preparedKey, err := storage.PrepareKey(prefix, key, opts.Recursive)
	if err != nil {
		return Request{}, err
	}
	if opts.Predicate.Limit < 0 {
		return Request{}, apierrors.NewBadRequest(fmt.Sprintf("invalid limit: %d", opts.Predicate.Limit))
	}
	withRev, continueKey, err := storage.ValidateListOptions(preparedKey, v, opts)
	if err != nil {
		if !apierrors.IsBadRequest(err) {
			err = apierrors.NewBadRequest(err.Error())
		}
		return Request{}, err
	}
	rv, err := v.ParseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return Request{}, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %v", err))
	}
	return Request{Key: preparedKey, ContinueKey: continueKey, RV: rv, ContinueRV: withRev}, nil
}

// Quorum turns a LIST into the consistent read etcd serves for rv="":
// rv=0 (under FreshResourceVersionZero) means "any", and etcd's newest
// state is one of "any". A continuation keeps its token. An rv=0 LIST
// keeps its unpaginated answer (see pageLimit): etcd would honour the
// limit, and a paginated answer to rv=0 makes client-go's reflector page
// every later relist.
func Quorum(opts storage.ListOptions) storage.ListOptions {
	if opts.ResourceVersion == "0" {
		opts.ResourceVersion = ""
		opts.ResourceVersionMatch = ""
		opts.Predicate.Limit = 0
	}
	return opts
}

// Cost is how many objects etcd reads for a LIST: the objects of its
// key range (as snap knows them), or its limit when nothing filters
// the range (etcd reads on past the limit to fill a filtered page).
func Cost(snap *store.Snapshot, req Request, opts storage.ListOptions) int64 {
	if !opts.Recursive {
		return 1
	}
	n := int64(snap.CountRange(req.Key, req.End(true)))
	if l := opts.Predicate.Limit; l > 0 && l < n && opts.Predicate.Empty() {
		n = l
	}
	return max(n, 1)
}
