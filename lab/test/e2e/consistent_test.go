package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/freshcache/freshcache/lab/internal/scrape"
)

// TestConsistentReadsServedFromCache checks, through the real apiserver,
// that LIST and GET with rv="" (and rv=0 with FreshResourceVersionZero on)
// see every acknowledged write and are answered by freshcache, as its
// metrics show, with the revision fetches and progress requests counted.
func TestConsistentReadsServedFromCache(t *testing.T) {
	l := startLocalUp(t, "--watch-cache-implementation=freshcache", "--feature-gates=FreshResourceVersionZero=true")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := l.client(t, 0)
	ns := createNamespace(ctx, t, cs, "consistent")

	for i := 0; i < 20; i++ {
		name := fmt.Sprintf("cm-%d", i)
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// Each read comes right after an acknowledged write, so a cache
		// that served without waiting would miss it.
		for _, rv := range []string{"", "0"} {
			list, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{ResourceVersion: rv})
			if err != nil {
				t.Fatalf("list rv=%q: %v", rv, err)
			}
			if got := countPrefixed(list.Items, "cm-"); got != i+1 {
				t.Fatalf("list rv=%q right after creating %s returned %d configmaps, want %d", rv, name, got, i+1)
			}
			if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{ResourceVersion: rv}); err != nil {
				t.Fatalf("get rv=%q of %s right after its creation: %v", rv, name, err)
			}
		}
	}

	m := apiserverMetrics(ctx, t, cs)
	for _, sel := range []string{
		`apiserver_freshcache_reads_total{group="",outcome="cache",requested="consistent",resource="configmaps",verb="list"}`,
		`apiserver_freshcache_reads_total{group="",outcome="cache",requested="consistent",resource="configmaps",verb="get"}`,
		`apiserver_freshcache_reads_total{group="",outcome="cache",requested="zero",resource="configmaps",verb="list"}`,
		`apiserver_freshcache_reads_total{group="",outcome="cache",requested="zero",resource="configmaps",verb="get"}`,
	} {
		if v := m[sel]; v < 20 {
			t.Errorf("%s = %v, want >= 20: reads were not served by the cache", sel, v)
		}
	}
	fetches := sumPrefix(m, "apiserver_freshcache_revision_fetches_total{")
	if fetches < 1 {
		t.Errorf("no revision fetches recorded; metrics:\n%s", grepMetrics(m, "apiserver_freshcache_"))
	}
	for _, bad := range []string{"fallback", "rejected", "error"} {
		for k, v := range m {
			if strings.HasPrefix(k, "apiserver_freshcache_reads_total{") && strings.Contains(k, `outcome="`+bad+`"`) && strings.Contains(k, `resource="configmaps"`) && v > 0 {
				t.Errorf("%s = %v on a healthy etcd", k, v)
			}
		}
	}
	waits, found := m[`apiserver_freshcache_read_wait_seconds_count{group="",requested="consistent",resource="configmaps",verb="list"}`]
	if !found {
		t.Errorf("read wait histogram missing; metrics:\n%s", grepMetrics(m, "apiserver_freshcache_read_wait"))
	}
	// Every LIST served from the cache after its wait was released once
	// (give or take one of the apiserver's own LISTs ending during the
	// scrape), and no release without a wait.
	releases := m[`apiserver_freshcache_read_release_seconds_count{group="",requested="consistent",resource="configmaps",verb="list"}`]
	served := m[`apiserver_freshcache_reads_total{group="",outcome="cache",requested="consistent",resource="configmaps",verb="list"}`]
	if releases < 20 || releases < served-1 || releases > served+1 || releases > waits+1 {
		t.Errorf("%v releases for %v LISTs served from the cache and %v waits; metrics:\n%s", releases, served, waits, grepMetrics(m, "apiserver_freshcache_read_"))
	}
	// Every successful fetch is timed: as many durations as successes, give
	// or take the one fetch that may be ending during the scrape (the
	// apiserver's own controllers read too).
	ok := m[`apiserver_freshcache_revision_fetches_total{result="success"}`]
	if timed := m[`apiserver_freshcache_revision_fetch_duration_seconds_count{result="success"}`]; ok < 1 || timed < 1 || timed < ok-1 || timed > ok+1 {
		t.Errorf("%v successful fetches but %v timed ones; metrics:\n%s", ok, timed, grepMetrics(m, "apiserver_freshcache_revision_fetch"))
	}
}

// apiserverMetrics returns every sample of /metrics keyed by name{labels}.
func apiserverMetrics(ctx context.Context, t *testing.T, cs kubernetes.Interface) map[string]float64 {
	t.Helper()
	body, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out, err := scrape.Samples(body)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sumPrefix(m map[string]float64, prefix string) float64 {
	total := 0.0
	for k, v := range m {
		if strings.HasPrefix(k, prefix) {
			total += v
		}
	}
	return total
}

func grepMetrics(m map[string]float64, prefix string) string {
	var b strings.Builder
	for k, v := range m {
		if strings.HasPrefix(k, prefix) {
			fmt.Fprintf(&b, "%s %v\n", k, v)
		}
	}
	return b.String()
}
