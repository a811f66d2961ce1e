package reflector_test

import (
	"testing"

	"github.com/freshcache/watchcache/internal/reflector"
)

func TestEtcdKeyIsTheStoreLayout(t *testing.T) {
	for _, tc := range []struct{ storage, resource, want string }{
		{"/registry", "/pods", "/registry/pods/"},
		{"registry", "/pods/", "/registry/pods/"},
		{"/registry/", "pods", "/registry/pods/"},
		{"", "/pods", "/pods/"},
		{"/registry", "/example.com/widgets", "/registry/example.com/widgets/"},
	} {
		if got := reflector.EtcdKey(tc.storage, tc.resource); got != tc.want {
			t.Errorf("EtcdKey(%q, %q) = %q, want %q", tc.storage, tc.resource, got, tc.want)
		}
	}
}
