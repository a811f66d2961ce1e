package robustness

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	clientscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/freshcache/freshcache/lab/test/robustness/record"
)

// ValueAnnotation carries the unique value of each write.
const ValueAnnotation = "robustness.freshcache.io/value"

// podPrefix is where the pods of Namespace live in etcd.
const podPrefix = "/registry/pods/" + Namespace + "/"

// Truth records etcd's own history of the pods with a direct watch from
// revision 1, resumed after every break. The fault schedule never compacts
// past what it has received.
type Truth struct {
	cli *clientv3.Client

	// mu guards events, written, deleted, last and err; changed is closed
	// and replaced on every advance.
	mu     sync.Mutex
	events []record.TruthEvent
	// written maps a value (unique per write) to the revision that stored
	// it; deleted maps a version (name, modRev) to the revision that
	// deleted it. Clients that wrote to etcd directly learn their outcomes
	// from them (txn.go, lease.go).
	written map[string]int64
	deleted map[version]int64
	last    int64
	err     error
	changed chan struct{}
	done    chan struct{}
}

// version is one version of a pod: its name and modRev.
type version struct {
	name   string
	modRev int64
}

// podDoc is what the checkers need of a stored pod.
type podDoc struct {
	Value, Node string
}

// decodePod reads a pod as etcd stores it: JSON (the in-process caches'
// codec) or Kubernetes protobuf (kube-apiserver's default).
func decodePod(b []byte) (podDoc, error) {
	obj, _, err := clientscheme.Codecs.UniversalDeserializer().Decode(b, nil, nil)
	if err != nil {
		return podDoc{}, err
	}
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return podDoc{}, fmt.Errorf("stored object is a %T, not a pod", obj)
	}
	return podDoc{Value: p.Annotations[ValueAnnotation], Node: p.Spec.NodeName}, nil
}

// StartTruth starts the watch. Stop it by cancelling ctx.
func StartTruth(ctx context.Context, cli *clientv3.Client) *Truth {
	t := &Truth{cli: cli, written: map[string]int64{}, deleted: map[version]int64{}, changed: make(chan struct{}), done: make(chan struct{})}
	go t.run(ctx)
	return t
}

func (t *Truth) run(ctx context.Context) {
	defer close(t.done)
	retry := time.NewTicker(100 * time.Millisecond)
	defer retry.Stop()
	for ctx.Err() == nil {
		t.mu.Lock()
		from := t.last + 1
		t.mu.Unlock()
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		wch := t.cli.Watch(wctx, podPrefix, clientv3.WithPrefix(), clientv3.WithRev(from), clientv3.WithPrevKV(), clientv3.WithProgressNotify())
		for resp := range wch {
			if err := resp.Err(); err != nil {
				if errors.Is(err, rpctypes.ErrCompacted) {
					t.fail(fmt.Errorf("truth watch compacted at %d while resuming from %d: the run cannot be checked", resp.CompactRevision, from))
					cancel()
					return
				}
				break
			}
			t.apply(resp)
		}
		cancel()
		select {
		case <-ctx.Done():
		case <-retry.C:
		}
	}
}

func (t *Truth) fail(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err == nil {
		t.err = err
	}
	close(t.changed)
	t.changed = make(chan struct{})
}

func (t *Truth) apply(resp clientv3.WatchResponse) {
	var evs []record.TruthEvent
	for _, e := range resp.Events {
		te := record.TruthEvent{Rev: e.Kv.ModRevision, Name: strings.TrimPrefix(string(e.Kv.Key), podPrefix)}
		switch e.Type {
		case clientv3.EventTypeDelete:
			te.Deleted = true
			if e.PrevKv != nil {
				te.PrevModRev = e.PrevKv.ModRevision
				if d, err := decodePod(e.PrevKv.Value); err == nil {
					te.Value, te.Node = d.Value, d.Node
				}
			}
		default:
			te.Created = e.IsCreate()
			if e.PrevKv != nil {
				te.PrevModRev = e.PrevKv.ModRevision
			}
			if d, err := decodePod(e.Kv.Value); err == nil {
				te.Value, te.Node = d.Value, d.Node
			}
		}
		evs = append(evs, te)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.events = append(t.events, evs...)
	for _, e := range evs {
		switch {
		case e.Deleted:
			t.deleted[version{e.Name, e.PrevModRev}] = e.Rev
		case e.Value != "":
			t.written[e.Value] = e.Rev
		}
	}
	if rev := resp.Header.Revision; rev > t.last {
		t.last = rev
	}
	for _, e := range evs {
		t.last = max(t.last, e.Rev)
	}
	close(t.changed)
	t.changed = make(chan struct{})
}

// Last is the revision up to which the truth is complete.
func (t *Truth) Last() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

// WaitFor waits until the truth covers rev.
func (t *Truth) WaitFor(ctx context.Context, rev int64) error {
	nudge := time.NewTicker(500 * time.Millisecond)
	defer nudge.Stop()
	for {
		t.mu.Lock()
		last, err, ch := t.last, t.err, t.changed
		t.mu.Unlock()
		if err != nil {
			return err
		}
		if last >= rev {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("truth watch at %d, waiting for %d: %w", last, rev, ctx.Err())
		case <-ch:
		case <-nudge.C:
			// An idle watch learns the current revision from a progress
			// notification.
			_ = t.cli.RequestProgress(clientv3.WithRequireLeader(ctx))
		}
	}
}

// Events returns what was recorded and the watch's error, if any.
func (t *Truth) Events() ([]record.TruthEvent, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]record.TruthEvent(nil), t.events...), t.err
}

// Written returns the revision at which value was written, if the truth
// has it so far.
func (t *Truth) Written(value string) (int64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	rev, ok := t.written[value]
	return rev, ok
}

// DeletedAt returns the revision that deleted the version of name at
// modRev, if the truth has it so far.
func (t *Truth) DeletedAt(name string, modRev int64) (int64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	rev, ok := t.deleted[version{name, modRev}]
	return rev, ok
}
