package localup

// kwok nodes (--kwok-nodes): local-up creates the Node objects, one kwok
// controller keeps them Ready and plays their pods' lifecycle (package
// kwoknode says what it does and does not simulate).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/freshcache/freshcache/lab/pkg/localup/kwoknode"
)

const (
	kwokName = "kwok"
	// KwokUser is the kwok controller's identity. It acts for every kwok
	// node at once (their Leases, their status, their pods' status and
	// deletion), which no one node identity of the Node authorizer may, so
	// RBAC gives it kwokRole, and nothing more.
	KwokUser = "system:kwok-controller"
	kwokRole = "freshcache:kwok-controller"
	// nodeWriters bounds the concurrent creates and deletes of kwok nodes.
	nodeWriters = 16
	// adminQPS is the rate limit of local-up's own client.
	adminQPS = 500
)

// Kwok is the running kwok controller and the nodes it keeps.
type Kwok struct {
	*Process
	Kubeconfig string
	Config     string
	// Nodes are the kwok nodes' names, in index order.
	Nodes []string
}

// startKwok makes the Node objects match --kwok-nodes (creating the
// missing ones, deleting kwok nodes of a larger earlier run), writes kwok's
// configuration and credentials and starts it against the first apiserver.
// started is when the wait for the nodes may count a Lease renewal as
// this run's.
func (c *Cluster) startKwok(ctx context.Context, cs kubernetes.Interface, binary string) (started time.Time, err error) {
	o := c.Options.Kwok
	dir := filepath.Join(c.dataDir, "kwok")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return time.Time{}, err
	}
	var taints []corev1.Taint
	if c.Options.RealNodes > 0 {
		taints = []corev1.Taint{HollowTaint}
	}
	if err := reconcileKwokNodes(ctx, cs, o, taints); err != nil {
		return time.Time{}, err
	}
	if err := ensureKwokRBAC(ctx, cs); err != nil {
		return time.Time{}, err
	}
	if err := c.PKI.EnsureClient(kwokName, KwokUser, nil); err != nil {
		return time.Time{}, err
	}
	k := &Kwok{
		Kubeconfig: filepath.Join(c.dataDir, "kubeconfigs", kwokName+".kubeconfig"),
		Config:     filepath.Join(dir, "kwok.yaml"),
	}
	if err := WriteClientKubeconfig(k.Kubeconfig, c.APIServers[0].URL, c.PKI, kwokName, KwokUser); err != nil {
		return time.Time{}, err
	}
	if err := os.WriteFile(k.Config, []byte(o.Config()), 0o644); err != nil {
		return time.Time{}, err
	}
	for i := 0; i < o.Nodes; i++ {
		k.Nodes = append(k.Nodes, o.NodeName(i))
	}
	started = time.Now()
	k.Process, err = StartProcess(kwokName, binary, filepath.Join(c.dataDir, "logs", kwokName+".log"), o.Args(k.Kubeconfig, k.Config, ""))
	if err != nil {
		return time.Time{}, err
	}
	c.track(k.Process)
	c.Kwok = k
	return started, nil
}

// kwokRules are what kwok does: watch and update nodes and pods and their
// status, delete pods, keep the node Leases, record events.
var kwokRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"nodes", "pods"}, Verbs: []string{"get", "list", "watch", "update", "patch", "delete"}},
	{APIGroups: []string{""}, Resources: []string{"nodes/status", "pods/status"}, Verbs: []string{"get", "update", "patch"}},
	{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch"}},
	{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "update", "patch"}},
}

// ensureKwokRBAC creates, or updates to kwokRules, kwokRole and its
// binding to KwokUser.
func ensureKwokRBAC(ctx context.Context, cs kubernetes.Interface) error {
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: kwokRole}, Rules: kwokRules}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		_, err = cs.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("localup: updating ClusterRole %s: %w", kwokRole, err)
		}
	} else if err != nil {
		return fmt.Errorf("localup: creating ClusterRole %s: %w", kwokRole, err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: kwokRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: kwokRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: KwokUser}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("localup: binding %s to %s: %w", kwokRole, KwokUser, err)
	}
	return nil
}

// reconcileKwokNodes creates kwok nodes 0..o.Nodes-1 that do not exist and
// deletes the kwok nodes (ManagedLabel) beyond them; nodes that exist are
// kept, with their pods.
func reconcileKwokNodes(ctx context.Context, cs kubernetes.Interface, o kwoknode.Options, taints []corev1.Taint) error {
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: kwoknode.ManagedLabel + "=true"})
	if err != nil {
		return fmt.Errorf("localup: listing kwok nodes: %w", err)
	}
	have := map[int]bool{}
	var extra []string
	for _, n := range list.Items {
		if i := o.NodeIndex(n.Name); i >= 0 && i < o.Nodes {
			have[i] = true
		} else {
			extra = append(extra, n.Name)
		}
	}
	var create []int
	for i := 0; i < o.Nodes; i++ {
		if !have[i] {
			create = append(create, i)
		}
	}
	return parallel(len(extra)+len(create), nodeWriters, func(j int) error {
		if j < len(extra) {
			err := cs.CoreV1().Nodes().Delete(ctx, extra[j], metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("localup: deleting kwok node %s of an earlier run: %w", extra[j], err)
			}
			return nil
		}
		node, err := o.Node(create[j-len(extra)], taints)
		if err != nil {
			return err
		}
		if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("localup: creating kwok node %s: %w", node.Name, err)
		}
		return nil
	})
}

// parallel runs f(0..n-1) on at most workers goroutines and returns the
// errors joined (the first few; one is enough to stop a start).
func parallel(n, workers int, f func(int) error) error {
	var (
		mu   sync.Mutex
		errs []string
		next int
		wg   sync.WaitGroup
	)
	for w := 0; w < min(workers, n); w++ {
		wg.Go(func() {
			for {
				mu.Lock()
				j := next
				next++
				stop := len(errs) > 0
				mu.Unlock()
				if j >= n || stop {
					return
				}
				if err := f(j); err != nil {
					mu.Lock()
					errs = append(errs, err.Error())
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if len(errs) == 0 {
		return nil
	}
	sort.Strings(errs)
	if len(errs) > 3 {
		errs = append(errs[:3], fmt.Sprintf("and %d more", len(errs)-3))
	}
	return fmt.Errorf("%s", strings.Join(errs, "; "))
}

// waitKwokNodesReady waits until every kwok node is Ready and its Lease
// was renewed after started: a node object and Lease kept from an earlier
// run do not count until this run's kwok has taken them over.
func (c *Cluster) waitKwokNodesReady(ctx context.Context, cs kubernetes.Interface, started time.Time) error {
	want := make(map[string]bool, len(c.Kwok.Nodes))
	for _, n := range c.Kwok.Nodes {
		want[n] = true
	}
	return c.waitFor(ctx, fmt.Sprintf("%d kwok node(s) Ready", len(want)), func() (bool, string) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: kwoknode.ManagedLabel + "=true"})
		if err != nil {
			return false, err.Error()
		}
		leases, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return kwokNodesReady(want, nodes.Items, leases.Items, started)
	})
}

// kwokNodesReady is waitKwokNodesReady's condition: every wanted node is
// Ready, and its Lease was renewed at or after started (to the second).
func kwokNodesReady(want map[string]bool, nodes []corev1.Node, leases []coordinationv1.Lease, started time.Time) (bool, string) {
	since := started.Truncate(time.Second)
	renewed := map[string]bool{}
	for _, l := range leases {
		if want[l.Name] && l.Spec.RenewTime != nil && !l.Spec.RenewTime.Time.Before(since) {
			renewed[l.Name] = true
		}
	}
	ready := map[string]bool{}
	for i := range nodes {
		n := &nodes[i]
		if !want[n.Name] {
			continue
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				ready[n.Name] = true
			}
		}
	}
	var notReady, notRenewed int
	var example string
	for name := range want {
		switch {
		case !ready[name]:
			notReady++
			if example == "" || name < example {
				example = name
			}
		case !renewed[name]:
			notRenewed++
		}
	}
	if notReady == 0 && notRenewed == 0 {
		return true, ""
	}
	return false, fmt.Sprintf("%d/%d Ready with a Lease renewed by this run (%d not Ready, e.g. %s; %d with no renewal yet)",
		len(want)-notReady-notRenewed, len(want), notReady, example, notRenewed)
}
