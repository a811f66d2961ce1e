package watchcache

import (
	"errors"
	"testing"

	"github.com/freshcache/watchcache/internal/versionguard"
	"github.com/freshcache/watchcache/metrics"
)

func TestGuardReason(t *testing.T) {
	old := versionguard.Result{Endpoints: []versionguard.Endpoint{{URL: "http://e0", Version: "3.5.12"}}}
	if got := guardReason(old); got != metrics.ReasonEtcdVersion {
		t.Errorf("etcd 3.5.12: %q, want %q", got, metrics.ReasonEtcdVersion)
	}
	unreachable := versionguard.Result{Endpoints: []versionguard.Endpoint{{URL: "http://e0", Err: errors.New("down")}}}
	if got := guardReason(unreachable); got != metrics.ReasonEtcdVersion {
		t.Errorf("unreachable endpoint: %q", got)
	}
	if got := guardReason(versionguard.Result{OK: true}); got != "" {
		t.Errorf("supported etcd: %q", got)
	}
}
