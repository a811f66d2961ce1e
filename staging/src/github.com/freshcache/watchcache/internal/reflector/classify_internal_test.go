package reflector

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/freshcache/watchcache/metrics"
)

// TestClassify: how each watch error the etcd3 store can send ends the
// watch. Only etcd's own troubles are retried on the same history; a
// value that cannot be read relists at once.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		transient bool
		relist    string
	}{
		{"no leader", apierrors.NewInternalError(errors.New("etcdserver: no leader")), true, ""},
		{"leader changed", apierrors.NewInternalError(errors.New("etcdserver: leader changed")), true, ""},
		{"grpc unavailable", apierrors.NewInternalError(errors.New("rpc error: code = Unavailable desc = connection refused")), true, ""},
		{"429", apierrors.NewTooManyRequests("etcdserver: too many requests", 1), true, ""},
		{"503", apierrors.NewServiceUnavailable("unavailable"), true, ""},
		{"504", apierrors.NewTimeoutError("etcdserver: request timed out", 1), true, ""},
		{"server timeout", apierrors.NewServerTimeout(schema.GroupResource{Resource: "pods"}, "watch", 1), true, ""},
		{"compacted", apierrors.NewResourceExpired("too old"), false, metrics.RelistCompacted},
		{"gone", &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonGone}}, false, metrics.RelistCompacted},
		{"decode", apierrors.NewInternalError(errors.New("provided data does not appear to be a protobuf message")), false, metrics.RelistError},
		{"transformer", apierrors.NewInternalError(errors.New("failed to decrypt DEK, error: rpc error: code = Unavailable")), false, metrics.RelistError},
		{"plain error", errors.New("etcdserver: no leader"), false, metrics.RelistError},
		{"bad request", apierrors.NewBadRequest("no"), false, metrics.RelistError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := classify(tc.err)
			if got.transient != tc.transient || got.relist != tc.relist {
				t.Fatalf("classify(%v) = transient %v, relist %q; want %v, %q", tc.err, got.transient, got.relist, tc.transient, tc.relist)
			}
		})
	}
}
