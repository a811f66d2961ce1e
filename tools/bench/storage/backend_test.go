package storage

import (
	"strings"
	"testing"

	"github.com/freshcache/watchcache"
)

// TestDecoratorNames: every backend name builds a decorator, and an
// unknown one is refused with the names that exist.
func TestDecoratorNames(t *testing.T) {
	for _, name := range append(AllBackends, BackendFreshcacheDirect) {
		if d, err := decorator(name, watchcache.DecoratorOptions{}); err != nil || d == nil {
			t.Errorf("decorator(%q) = %v, %v", name, d, err)
		}
	}
	if _, err := decorator("freshcache-indirect", watchcache.DecoratorOptions{}); err == nil || !strings.Contains(err.Error(), BackendFreshcacheDirect) {
		t.Errorf("unknown backend: %v", err)
	}
	if !isFreshcache(BackendFreshcacheDirect) || !isFreshcache(BackendFreshcache) || isFreshcache(BackendUpstream) {
		t.Error("isFreshcache")
	}
	if metricImpl(BackendFreshcacheDirect) != BackendFreshcache || metricImpl(BackendUpstream) != BackendUpstream {
		t.Error("metricImpl")
	}
}
