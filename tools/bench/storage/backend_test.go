package storage

import (
	"strings"
	"testing"

	"github.com/freshcache/watchcache"
)

// TestDecoratorNames: every backend name builds a decorator, and an
// unknown one is refused with the names that exist.
func TestDecoratorNames(t *testing.T) {
	for _, name := range AllBackends {
		if d, err := decorator(name, watchcache.DecoratorOptions{}); err != nil || d == nil {
			t.Errorf("decorator(%q) = %v, %v", name, d, err)
		}
	}
	_, err := decorator("cacher", watchcache.DecoratorOptions{})
	if err == nil {
		t.Fatal("an unknown backend was accepted")
	}
	for _, name := range AllBackends {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("unknown backend: %v does not name %s", err, name)
		}
	}
}
