package watchlist

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/freshcache/freshcache/lab/pkg/localup/launch"
)

// cluster is one configuration's local-up and what the phases need of it.
type cluster struct {
	cfg     Config
	proc    *launch.Process
	rest    *rest.Config
	cs      kubernetes.Interface
	store   *store
	probe   *cpuProbe
	scraper *scraper
}

// startCluster runs local-up for one configuration: one kube-apiserver,
// its embedded etcd, no controllers and no nodes (launch's defaults).
func startCluster(ctx context.Context, cfg Config, config, dataDir string) (*cluster, error) {
	args := append(localUpArgs(config), cfg.LocalUpArgs...)
	p, err := launch.Start(ctx, launch.Options{BinDir: cfg.BinDir, DataDir: dataDir, Args: args, ReadyTimeout: cfg.ReadyTimeout})
	if err != nil {
		return nil, fmt.Errorf("watchlist: starting local-up %v: %w", args, err)
	}
	c := &cluster{cfg: cfg, proc: p}
	if err := c.connect(); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

func (c *cluster) connect() error {
	ready := c.proc.Ready
	if len(ready.APIServers) == 0 || len(ready.Etcd.Endpoints) == 0 {
		return errors.New("watchlist: local-up's ready file names no apiserver or no etcd")
	}
	rc, err := clientcmd.BuildConfigFromFlags("", ready.Kubeconfig)
	if err != nil {
		return fmt.Errorf("watchlist: kubeconfig: %w", err)
	}
	rc.QPS, rc.Burst = -1, 0 // no client-side rate limit
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	c.rest = rc
	if c.cs, err = kubernetes.NewForConfig(rc); err != nil {
		return fmt.Errorf("watchlist: client: %w", err)
	}
	if c.scraper, err = newScraper(rc); err != nil {
		return err
	}
	if c.store, err = newStore(ready.Etcd.Endpoints[0], c.cfg); err != nil {
		return err
	}
	c.probe = &cpuProbe{apiserverPID: ready.APIServers[0].PID, localUpPID: ready.PID}
	return nil
}

// stop ends local-up (SIGINT, then a kill after its grace period).
func (c *cluster) stop() {
	if c.store != nil {
		c.store.close()
	}
	_ = c.proc.Stop(0)
}

// createNamespaces creates the data set's namespaces through the API, so
// that the cluster is one an operator would recognise; reads do not need
// them.
func (c *cluster) createNamespaces(ctx context.Context) error {
	names := []string{smallNamespace}
	for n := range c.cfg.HugeNamespaces {
		names = append(names, hugeNamespace(n))
	}
	for _, name := range names {
		_, err := c.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("watchlist: creating namespace %s: %w", name, err)
		}
	}
	return nil
}

// hugeCount is how many configmaps the load puts in huge namespace n.
func hugeCount(objects, namespaces, n int) int {
	c := objects / namespaces
	if n < objects%namespaces {
		c++
	}
	return c
}

// waitSynced waits until the apiserver's cache lists every loaded object:
// a LIST at rv=0 of each namespace (served from the cache) counts them.
func (c *cluster) waitSynced(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ReadyTimeout)
	defer cancel()
	type want struct {
		ns      string
		secrets bool
		n       int
	}
	wants := []want{{smallNamespace, false, c.cfg.SmallObjects}, {smallNamespace, true, c.cfg.SmallObjects}}
	for n := range c.cfg.HugeNamespaces {
		wants = append(wants, want{hugeNamespace(n), false, hugeCount(c.cfg.Objects, c.cfg.HugeNamespaces, n)})
	}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	rv0 := metav1.ListOptions{ResourceVersion: "0"}
	for _, w := range wants {
		got, lastErr := -1, error(nil)
		for {
			var err error
			if w.secrets {
				var l *corev1.SecretList
				if l, err = c.cs.CoreV1().Secrets(w.ns).List(ctx, rv0); err == nil {
					got = len(l.Items)
				}
			} else {
				var l *corev1.ConfigMapList
				if l, err = c.cs.CoreV1().ConfigMaps(w.ns).List(ctx, rv0); err == nil {
					got = len(l.Items)
				}
			}
			if err == nil && got == w.n {
				break
			}
			if err != nil {
				lastErr = err
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("watchlist: the cache lists %d of %d objects in %s after %v (last error: %v)", got, w.n, w.ns, c.cfg.ReadyTimeout, lastErr)
			case <-tick.C:
			}
		}
	}
	return nil
}
