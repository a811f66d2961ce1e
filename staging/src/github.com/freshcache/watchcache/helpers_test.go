package watchcache_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/fields"
)

func mustField(t *testing.T, s string) fields.Selector {
	t.Helper()
	sel, err := fields.ParseSelector(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}
