package robustness

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/freshcache/freshcache/lab/internal/freeport"
	"github.com/freshcache/freshcache/lab/internal/scrape"
	"github.com/freshcache/freshcache/lab/pkg/localup"
	"github.com/freshcache/freshcache/lab/test/robustness/record"
)

// KubeAPIServer is a real kube-apiserver child process (the binary `make
// build` produces) pinned to one etcd member through that member's client
// proxy, driven over HTTPS with client-go. Restart is a process restart.
type KubeAPIServer struct {
	index, member int
	binary        string
	logDir        string
	pki           localup.PKI
	args          []string

	// mu guards proc and client, which Restart replaces.
	mu     sync.Mutex
	proc   *localup.APIServer
	client kubernetes.Interface
	url    string
}

// KubeAPIServers returns a Config.NewAPIs that starts two kube-apiservers
// from binary, apiserver i pinned to member i, with extra flags (e.g.
// --watch-cache-implementation=upstream, --feature-gates=...). Logs and
// credentials go under dir.
func KubeAPIServers(binary, dir string, extra []string) func(context.Context, *Cluster) ([]API, error) {
	return func(ctx context.Context, cl *Cluster) ([]API, error) {
		pki := localup.PKI{Dir: filepath.Join(dir, "pki")}
		if err := pki.Ensure(localup.DefaultHosts()); err != nil {
			return nil, err
		}
		var out []API
		for i := range 2 {
			s := &KubeAPIServer{index: i, member: i, binary: binary, logDir: dir, pki: pki}
			s.args = append([]string{
				"--etcd-servers=" + cl.ProxiedClientURL(i),
				"--etcd-compaction-interval=0", // the fault schedule compacts
				"--bind-address=127.0.0.1",
				"--advertise-address=127.0.0.1",
				"--endpoint-reconciler-type=none",
				"--tls-cert-file=" + pki.ServingCert(),
				"--tls-private-key-file=" + pki.ServingKey(),
				"--client-ca-file=" + pki.CACert(),
				"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
				"--service-account-key-file=" + pki.ServiceAccountPub(),
				"--service-account-signing-key-file=" + pki.ServiceAccountKey(),
				"--service-cluster-ip-range=10.0.0.0/24",
				"--authorization-mode=RBAC",
			}, extra...)
			if err := s.start(); err != nil {
				for _, o := range out {
					o.Stop()
				}
				return nil, err
			}
			out = append(out, s)
		}
		for _, a := range out {
			if err := a.WaitReady(ctx); err != nil {
				for _, o := range out {
					o.Stop()
				}
				return nil, err
			}
		}
		// No controller-manager runs: create the default service account
		// that pod admission asks for.
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: Namespace}}
		if _, err := out[0].(*KubeAPIServer).clientset().CoreV1().ServiceAccounts(Namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating the default service account: %w", err)
		}
		return out, nil
	}
}

func (s *KubeAPIServer) start() error {
	port, err := freeport.Port("127.0.0.1")
	if err != nil {
		return err
	}
	url := "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	name := fmt.Sprintf("kube-apiserver-%d", s.index)
	args := append([]string{"--secure-port=" + strconv.Itoa(port)}, s.args...)
	proc, err := localup.StartAPIServer(name, s.binary, url, filepath.Join(s.logDir, name+".log"), args)
	if err != nil {
		return err
	}
	cfg := localup.RESTConfig(url, s.pki)
	cfg.QPS, cfg.Burst = 5000, 5000 // the traffic paces itself
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		proc.Stop(5 * time.Second)
		return err
	}
	s.mu.Lock()
	s.proc, s.client, s.url = proc, client, url
	s.mu.Unlock()
	return nil
}

func (s *KubeAPIServer) clientset() kubernetes.Interface {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.client
}

var _ API = (*KubeAPIServer)(nil)

// Index implements API.
func (s *KubeAPIServer) Index() int { return s.index }

// Member implements API.
func (s *KubeAPIServer) Member() int { return s.member }

// WaitReady implements API: /readyz answers 200.
func (s *KubeAPIServer) WaitReady(ctx context.Context) error {
	s.mu.Lock()
	proc, url := s.proc, s.url
	s.mu.Unlock()
	if err := proc.WaitReady(ctx, localup.RESTConfig(url, s.pki), 3*time.Minute); err != nil {
		return fmt.Errorf("%w\nlast lines of %s:\n%s", err, proc.LogPath, proc.TailLog(15))
	}
	return nil
}

// Restart implements API: SIGTERM, then a new process on a new port.
func (s *KubeAPIServer) Restart(ctx context.Context) error {
	s.mu.Lock()
	proc := s.proc
	s.mu.Unlock()
	proc.Stop(30 * time.Second)
	if err := s.start(); err != nil {
		return err
	}
	return s.WaitReady(ctx)
}

// Stop implements API.
func (s *KubeAPIServer) Stop() {
	s.mu.Lock()
	proc := s.proc
	s.mu.Unlock()
	proc.Stop(30 * time.Second)
}

// Do implements API with client-go, as controllers and kubelets call it:
// an optimistic update is a merge patch carrying the expected
// resourceVersion; a delete carries a ResourceVersion precondition and
// grace period 0 (no kubelet runs).
func (s *KubeAPIServer) Do(ctx context.Context, op *record.Op) error {
	c := s.clientset()
	pods := c.CoreV1().Pods(Namespace)
	switch op.Kind {
	case record.Create:
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: op.Name, Annotations: map[string]string{ValueAnnotation: op.Value}},
			Spec:       corev1.PodSpec{NodeName: op.Node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}
		out, err := pods.Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		op.RV = modRev(out)
	case record.Update:
		patch := fmt.Sprintf(`{"metadata":{"resourceVersion":%q,"annotations":{%q:%q}}}`, strconv.FormatInt(op.PreRV, 10), ValueAnnotation, op.Value)
		out, err := pods.Patch(ctx, op.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		if err != nil {
			return err
		}
		op.RV = modRev(out)
	case record.Delete:
		pre := strconv.FormatInt(op.PreRV, 10)
		zero := int64(0)
		opts := metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{ResourceVersion: &pre}}
		out := &corev1.Pod{}
		// The typed client drops the body; the deleted pod's RV is the
		// revision of the deletion.
		if err := c.CoreV1().RESTClient().Delete().Namespace(Namespace).Resource("pods").Name(op.Name).Body(&opts).Do(ctx).Into(out); err != nil {
			return err
		}
		op.RV = modRev(out)
	case record.Get:
		out, err := pods.Get(ctx, op.Name, metav1.GetOptions{ResourceVersion: readRV(op)})
		return recordGot(op, out, err, apierrors.IsNotFound)
	case record.List:
		opts := metav1.ListOptions{ResourceVersion: readRV(op)}
		if op.Node != "" {
			opts.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", op.Node).String()
		}
		if op.Mode == record.NotOlder {
			opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
		}
		out, err := pods.List(ctx, opts)
		if err != nil {
			return err
		}
		return recordList(op, out.ResourceVersion, out.Items, func(p *corev1.Pod) record.Item { return podItem(p, p.Spec.NodeName) })
	}
	return nil
}

// Watch implements API. The server-side timeout follows ctx's deadline, so
// the apiserver sends its bookmark before the watch ends.
func (s *KubeAPIServer) Watch(ctx context.Context, node string, rv int64) (watch.Interface, error) {
	opts := metav1.ListOptions{ResourceVersion: strconv.FormatInt(rv, 10), AllowWatchBookmarks: true}
	if node != "" {
		opts.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", node).String()
	}
	if d, ok := ctx.Deadline(); ok {
		secs := int64(time.Until(d).Seconds())
		opts.TimeoutSeconds = &secs
	}
	return s.clientset().CoreV1().Pods(Namespace).Watch(ctx, opts)
}

// Metrics reads the cache counters from /metrics (this process's since its
// last restart).
func (s *KubeAPIServer) Metrics(ctx context.Context) map[string]float64 {
	out := map[string]float64{}
	raw, err := s.clientset().CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return out
	}
	samples, _ := scrape.Samples(raw)
	for k, v := range samples {
		if !strings.HasPrefix(k, "apiserver_freshcache_reads_total") && !strings.HasPrefix(k, "apiserver_watch_cache_consistent_read_total") &&
			!strings.HasPrefix(k, "apiserver_freshcache_terminated_watchers_total") && !strings.HasPrefix(k, "apiserver_terminated_watchers_total") {
			continue
		}
		if !strings.Contains(k, `resource="pods"`) {
			continue
		}
		out[k] += v
	}
	return out
}
