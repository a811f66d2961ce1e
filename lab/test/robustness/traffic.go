package robustness

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
	api "k8s.io/kubernetes/pkg/apis/core"
	registrypod "k8s.io/kubernetes/pkg/registry/core/pod"

	"github.com/freshcache/freshcache/lab/test/robustness/record"
)

// Traffic shapes the clients' operations.
type Traffic struct {
	// Keys is the number of pod names; Nodes the number of nodes.
	Keys, Nodes int
	// Clients is the number of concurrent clients; each runs one op at a
	// time, at most one per Pace.
	Clients int
	Pace    time.Duration
	// ZeroReads adds rv=0 LIST and GET (kubelet and informer restarts).
	ZeroReads bool
	// OpTimeout bounds every operation.
	OpTimeout time.Duration
	// Txns and Leases are the percentages of client ops that write to etcd
	// directly (txn.go, lease.go): a conditional transaction on 2-4 pods,
	// and a lease with 2-4 new pods that etcd deletes together when it
	// expires. Both need the client's rawEtcd.
	Txns, Leases int
}

func podName(i int) string  { return fmt.Sprintf("pod-%02d", i) }
func nodeName(i int) string { return fmt.Sprintf("node-%d", i) }

// Keys lists the key space.
func (t Traffic) keyNames() []string {
	out := make([]string, t.Keys)
	for i := range out {
		out[i] = podName(i)
	}
	return out
}

// actor is what every client of the caches has: its identity, its random
// source, the caches and the one it uses now, where it records its
// operations, the watchdog over them, and the traffic's settings.
type actor struct {
	id     int
	rng    *rand.Rand
	caches []API
	cur    int
	rec    *Recorder
	wd     *watchdog
	tr     Traffic
}

// nextCache switches the actor to the next cache.
func (a *actor) nextCache() { a.cur = (a.cur + 1) % len(a.caches) }

// client is one sequential actor, like a controller or kubelet: it sticks
// to one cache and switches to the other on errors and now and then.
type client struct {
	actor
	seq int
	// known is the last modRev this client saw per pod (its preconditions).
	known map[string]int64
	// frontier is the highest RV the client observed (for rv=N reads).
	frontier int64
	// etcd, when set, lets the client write to etcd directly (Txns,
	// Leases); batch numbers those writes (record.Op.BatchID).
	etcd  *rawEtcd
	batch int
	// lease is the client's lease whose keys etcd has not been seen to
	// delete yet; the client holds one at a time.
	lease *lease
}

func newClient(id int, seed uint64, caches []API, rec *Recorder, wd *watchdog, tr Traffic) *client {
	rng := rand.New(rand.NewPCG(seed, uint64(id)))
	return &client{actor: actor{id: id, rng: rng, caches: caches, cur: rng.IntN(len(caches)), rec: rec, wd: wd, tr: tr}, known: map[string]int64{}}
}

func (c *client) run(ctx context.Context) {
	pace := time.NewTicker(c.tr.Pace)
	defer pace.Stop()
	// A lease still held when the traffic stops is revoked, and its
	// deletion recorded, before the run reads etcd's final revision.
	defer c.endLease(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-pace.C:
		}
		c.pollLease(ctx)
		var ok bool
		switch c.nextBatch() {
		case record.BatchTxn:
			ok = c.txn(ctx)
		case record.BatchLease:
			ok = c.startLease(ctx)
		default:
			op := c.next()
			ok = c.do(ctx, &op)
			// Record even an op cut short by the shutdown: a write may have
			// been applied (it is Unknown, and etcd's history resolves it).
			c.rec.AddOp(op)
		}
		if ctx.Err() != nil {
			return
		}
		if !ok || c.rng.IntN(20) == 0 {
			c.nextCache()
		}
	}
}

// nextBatch picks, now and then, a write straight to etcd instead of an op
// through an API.
func (c *client) nextBatch() record.Batch {
	if c.etcd == nil {
		return ""
	}
	n := c.rng.IntN(100)
	switch {
	case n < c.tr.Txns:
		return record.BatchTxn
	case n < c.tr.Txns+c.tr.Leases && c.lease == nil:
		return record.BatchLease
	}
	return ""
}

// value is a new unique value for a write.
func (c *client) value() string {
	c.seq++
	return "c" + strconv.Itoa(c.id) + "-" + strconv.Itoa(c.seq)
}

// next picks an operation.
func (c *client) next() record.Op {
	op := record.Op{Client: c.id, Cache: c.cur}
	name := podName(c.rng.IntN(c.tr.Keys))
	n := c.rng.IntN(100)
	read := func(kind record.Kind) {
		op.Kind = kind
		m := c.rng.IntN(10)
		switch {
		case c.tr.ZeroReads && m < 4:
			op.Mode = record.Zero
		case m < 8:
			op.Mode = record.Consistent
		default:
			op.Mode = record.NotOlder
			op.MinRV = max(c.frontier, 1)
		}
	}
	switch {
	case n < 15:
		op.Kind, op.Name, op.Node = record.Create, name, nodeName(c.rng.IntN(c.tr.Nodes))
		op.Value = c.value()
	case n < 45: // an update below 35, a delete from there
		pre, ok := c.known[name]
		if !ok {
			read(record.Get)
			op.Name = name
			break
		}
		op.Kind, op.Name, op.PreRV = record.Delete, name, pre
		if n < 35 {
			op.Kind = record.Update
			op.Value = c.value()
		}
	case n < 65:
		read(record.Get)
		op.Name = name
	case n < 88:
		read(record.List)
	default:
		read(record.List)
		op.Node = nodeName(c.rng.IntN(c.tr.Nodes))
	}
	return op
}

// do runs op on the client's current cache and fills in its result. It
// reports false on an error that is not a definite answer.
func (c *client) do(ctx context.Context, op *record.Op) bool {
	octx, cancel := context.WithTimeout(ctx, c.tr.OpTimeout)
	defer cancel()
	end := c.wd.begin(fmt.Sprintf("client %d: %s (read mode %q) on cache %d", c.id, op.Kind, op.Mode, op.Cache), c.tr.OpTimeout)
	defer end()
	op.Call = c.rec.Now()
	err := c.caches[op.Cache].Do(octx, op)
	op.Return = c.rec.Now()
	classify(op, err)
	switch {
	case op.Out != record.OK:
	case op.IsWrite():
		c.observe(op.RV)
		if op.Kind == record.Delete {
			delete(c.known, op.Name)
		} else {
			c.known[op.Name] = op.RV
		}
	case op.Kind == record.Get:
		if op.Found {
			c.known[op.Name] = op.RV
			c.observe(op.RV)
		} else {
			delete(c.known, op.Name)
		}
	case op.Kind == record.List:
		c.observe(op.RV)
		for _, it := range op.Items {
			c.known[it.Name] = it.ModRev
		}
	}
	return op.Out != record.Unknown && (op.Out != record.Failed || op.Reason != "")
}

func (c *client) observe(rv int64) { c.frontier = max(c.frontier, rv) }

// execute runs op through the storage.Interface.
func execute(ctx context.Context, s storage.Interface, cache *Cache, op *record.Op) error {
	switch op.Kind {
	case record.Create:
		out := &api.Pod{}
		if err := s.Create(ctx, cache.Key(op.Name), newPod(op.Name, op.Node, op.Value), out, 0); err != nil {
			return err
		}
		op.RV = modRev(out)
	case record.Update:
		pre := strconv.FormatInt(op.PreRV, 10)
		out := &api.Pod{}
		err := s.GuaranteedUpdate(ctx, cache.Key(op.Name), out, false, &storage.Preconditions{ResourceVersion: &pre},
			func(in runtime.Object, _ storage.ResponseMeta) (runtime.Object, *uint64, error) {
				p := in.(*api.Pod).DeepCopy()
				if p.Annotations == nil {
					p.Annotations = map[string]string{}
				}
				p.Annotations[ValueAnnotation] = op.Value
				return p, nil, nil
			}, nil)
		if err != nil {
			return err
		}
		op.RV = modRev(out)
	case record.Delete:
		pre := strconv.FormatInt(op.PreRV, 10)
		out := &api.Pod{}
		if err := s.Delete(ctx, cache.Key(op.Name), out, &storage.Preconditions{ResourceVersion: &pre}, storage.ValidateAllObjectFunc, nil, storage.DeleteOptions{}); err != nil {
			return err
		}
		op.RV = modRev(out)
	case record.Get:
		out := &api.Pod{}
		err := s.Get(ctx, cache.Key(op.Name), storage.GetOptions{ResourceVersion: readRV(op)}, out)
		return recordGot(op, out, err, storage.IsNotFound)
	case record.List:
		field := fields.Everything()
		if op.Node != "" {
			field = fields.OneTermEqualSelector("spec.nodeName", op.Node)
		}
		opts := storage.ListOptions{
			ResourceVersion: readRV(op),
			Recursive:       true,
			Predicate:       registrypod.MatchPod(labels.Everything(), field),
		}
		if op.Mode == record.NotOlder {
			opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
		}
		out := &api.PodList{}
		if err := s.GetList(ctx, cache.ListKey(), opts, out); err != nil {
			return err
		}
		return recordList(op, out.ResourceVersion, out.Items, func(p *api.Pod) record.Item { return podItem(p, p.Spec.NodeName) })
	}
	return nil
}

// newPod is the pod every create writes.
func newPod(name, node, value string) *api.Pod {
	return &api.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace, Annotations: map[string]string{ValueAnnotation: value}},
		Spec:       api.PodSpec{NodeName: node, Containers: []api.Container{{Name: "c", Image: "busybox"}}},
	}
}

func readRV(op *record.Op) string {
	switch op.Mode {
	case record.Zero:
		return "0"
	case record.NotOlder:
		return strconv.FormatInt(op.MinRV, 10)
	}
	return ""
}

// recordList records a LIST's answer in op: the list's revision and one
// item per pod. The pods are corev1's through kube-apiserver and the
// internal ones through the storage, hence item.
func recordList[P any](op *record.Op, listRV string, pods []P, item func(*P) record.Item) error {
	rv, err := strconv.ParseInt(listRV, 10, 64)
	if err != nil {
		return fmt.Errorf("list RV %q: %w", listRV, err)
	}
	op.RV = rv
	op.Items = make([]record.Item, 0, len(pods))
	for i := range pods {
		op.Items = append(op.Items, item(&pods[i]))
	}
	return nil
}

// podItem is a listed pod as the record holds it; node is its
// spec.nodeName, which metav1.Object does not reach.
func podItem(p metav1.Object, node string) record.Item {
	return record.Item{Name: p.GetName(), Value: p.GetAnnotations()[ValueAnnotation], Node: node, ModRev: modRev(p)}
}

// modRev is the pod's modRevision: its resourceVersion, 0 when unset.
func modRev(p metav1.Object) int64 {
	v, _ := strconv.ParseInt(p.GetResourceVersion(), 10, 64)
	return v
}

// recordGot records a GET's answer in op: found, with its value and
// modRevision, unless isNotFound(err), which leaves op not found.
func recordGot(op *record.Op, p metav1.Object, err error, isNotFound func(error) bool) error {
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	op.Found, op.Got, op.RV = true, p.GetAnnotations()[ValueAnnotation], modRev(p)
	return nil
}

// classify turns err into the op's outcome. Definite answers (exists,
// conflict, not found) cannot have changed state; anything else on a
// write may have.
func classify(op *record.Op, err error) {
	if err == nil {
		op.Out = record.OK
		return
	}
	op.Err = err.Error()
	switch {
	case storage.IsExist(err) || apierrors.IsAlreadyExists(err):
		op.Out, op.Reason = record.Failed, record.ReasonExists
	case storage.IsInvalidObj(err) || storage.IsConflict(err) || apierrors.IsConflict(err):
		op.Out, op.Reason = record.Failed, record.ReasonConflict
	case storage.IsNotFound(err) || apierrors.IsNotFound(err):
		op.Out, op.Reason = record.Failed, record.ReasonNotFound
	case op.IsWrite():
		op.Out = record.Unknown
	default:
		op.Out = record.Failed
	}
}
