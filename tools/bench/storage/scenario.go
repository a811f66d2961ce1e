package storage

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	api "k8s.io/kubernetes/pkg/apis/core"
)

// Scenario names.
const (
	ScenarioListNode   = "list-node"     // LIST by spec.nodeName: the kubelet's list
	ScenarioListAll    = "list-all"      // LIST every pod in every namespace
	ScenarioListLabel  = "list-label"    // LIST with a label selector (app=...)
	ScenarioListPaged  = "list-paged"    // LIST every pod in pages of 500
	ScenarioGet        = "get"           // GET one pod
	ScenarioWatchFan   = "watch-fanout"  // WATCH: c watchers on each of K nodes; ops are events delivered
	ScenarioKubeletRun = "kubelet-storm" // LIST by node, then WATCH from the list's RV
)

// AllScenarios is the order rows are run and printed in.
var AllScenarios = []string{ScenarioListNode, ScenarioListAll, ScenarioListLabel, ScenarioListPaged, ScenarioGet, ScenarioWatchFan, ScenarioKubeletRun}

// ResourceVersion modes. RVConsistent is rv="", RVZero is rv=0 and RVExact
// is rv=N where N is the newest revision the harness wrote (LISTs send it
// with resourceVersionMatch=NotOlderThan; GET and WATCH send it bare).
const (
	RVConsistent = `""`
	RVZero       = "0"
	RVNewest     = "N"
)

// allRVs is the order of the rv modes.
var allRVs = []string{RVConsistent, RVZero, RVNewest}

// pageSize is the limit of ScenarioListPaged.
const pageSize = 500

// opResult is what one operation reports besides its latency.
type opResult struct {
	items int
	// wrong is set when the number of items is not what the shape says it
	// must be: the harness's correctness check.
	wrong bool
}

// listOpts builds the ListOptions of a LIST in rv mode.
func (e *Env) listOpts(rv string) *metainternalversion.ListOptions {
	o := &metainternalversion.ListOptions{ResourceVersion: e.resourceVersion(rv)}
	if rv == RVNewest {
		o.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
	}
	return o
}

// resourceVersion is what a LIST, GET or WATCH in rv mode asks for: "0",
// etcd's newest revision as of now, or "" (a consistent read).
func (e *Env) resourceVersion(rv string) string {
	switch rv {
	case RVZero:
		return "0"
	case RVNewest:
		return strconv.FormatInt(e.lastRevision(), 10)
	}
	return ""
}

func nodeSelector(node int) fields.Selector {
	return fields.OneTermEqualSelector("spec.nodeName", NodeName(node))
}

// op runs one operation of a simple scenario (every one but the watch
// fan-out) against b.
func (e *Env) op(ctx context.Context, b *podBackend, scenario, rv string, r *rand.Rand) (opResult, error) {
	all := genericapirequest.WithNamespace(ctx, metav1.NamespaceAll)
	switch scenario {
	case ScenarioListNode, ScenarioKubeletRun:
		node := r.IntN(e.Shape.Nodes)
		o := e.listOpts(rv)
		o.FieldSelector = nodeSelector(node)
		obj, err := b.store.List(all, o)
		if err != nil {
			return opResult{}, err
		}
		list := obj.(*api.PodList)
		res := opResult{items: len(list.Items), wrong: len(list.Items) != e.Shape.PodsOnNode(node)}
		if scenario == ScenarioListNode {
			return res, nil
		}
		// A reflector watches from the RV its list returned.
		w, err := b.store.Watch(all, &metainternalversion.ListOptions{
			FieldSelector:       nodeSelector(node),
			ResourceVersion:     list.ResourceVersion,
			AllowWatchBookmarks: true,
		})
		if err != nil {
			return res, err
		}
		w.Stop()
		return res, nil
	case ScenarioListAll:
		obj, err := b.store.List(all, e.listOpts(rv))
		if err != nil {
			return opResult{}, err
		}
		n := len(obj.(*api.PodList).Items)
		return opResult{items: n, wrong: n != e.Shape.Pods}, nil
	case ScenarioListLabel:
		app := r.IntN(e.Shape.Apps)
		o := e.listOpts(rv)
		o.LabelSelector = labels.SelectorFromSet(labels.Set{"app": appName(app)})
		obj, err := b.store.List(all, o)
		if err != nil {
			return opResult{}, err
		}
		n := len(obj.(*api.PodList).Items)
		return opResult{items: n, wrong: n != e.Shape.podsOfApp(app)}, nil
	case ScenarioListPaged:
		o := e.listOpts(rv)
		o.Limit = pageSize
		n := 0
		for {
			obj, err := b.store.List(all, o)
			if err != nil {
				return opResult{items: n}, err
			}
			list := obj.(*api.PodList)
			n += len(list.Items)
			if list.Continue == "" {
				break
			}
			o = &metainternalversion.ListOptions{Limit: pageSize, Continue: list.Continue}
		}
		return opResult{items: n, wrong: n != e.Shape.Pods}, nil
	case ScenarioGet:
		i := r.IntN(e.Shape.Pods)
		ns, name := e.Shape.PodKey(i)
		o := &metav1.GetOptions{ResourceVersion: e.resourceVersion(rv)}
		obj, err := b.store.Get(genericapirequest.WithNamespace(ctx, ns), name, o)
		if err != nil {
			return opResult{}, err
		}
		got := obj.(*api.Pod)
		return opResult{items: 1, wrong: got.Name != name || got.Namespace != ns}, nil
	default:
		return opResult{}, fmt.Errorf("storage: scenario %q has no single operation", scenario)
	}
}
