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
// watch. Only etcd's own troubles, and a KMS plugin that cannot be
// reached, are retried on the same history; a value that cannot be read
// relists at once.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		transient bool
		relist    string
		// leaderless: retried at the shared LeaderBackoff's pace, not the
		// reflector's own backoff.
		leaderless bool
	}{
		{"no leader", apierrors.NewInternalError(errors.New("etcdserver: no leader")), true, "", true},
		{"leader changed", apierrors.NewInternalError(errors.New("etcdserver: leader changed")), true, "", true},
		{"timed out after leader failure", apierrors.NewInternalError(errors.New("etcdserver: request timed out, possibly due to previous leader failure")), true, "", true},
		{"no leader as a cause", &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 500, Reason: metav1.StatusReasonInternalError,
			Message: "Internal error occurred: watch failed", Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Message: "etcdserver: no leader"}}}}}, true, "", true},
		{"request timed out", apierrors.NewInternalError(errors.New("etcdserver: request timed out")), true, "", false},
		{"grpc unavailable", apierrors.NewInternalError(errors.New("rpc error: code = Unavailable desc = connection refused")), true, "", false},
		{"429", apierrors.NewTooManyRequests("etcdserver: too many requests", 1), true, "", false},
		{"503", apierrors.NewServiceUnavailable("unavailable"), true, "", false},
		{"504", apierrors.NewTimeoutError("etcdserver: request timed out", 1), true, "", false},
		{"server timeout", apierrors.NewServerTimeout(schema.GroupResource{Resource: "pods"}, "watch", 1), true, "", false},
		{"compacted", apierrors.NewResourceExpired("too old"), false, metrics.RelistCompacted, false},
		{"gone", &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonGone}}, false, metrics.RelistCompacted, false},
		{"decode", apierrors.NewInternalError(errors.New("provided data does not appear to be a protobuf message")), false, metrics.RelistError, false},
		{"KMS plugin unreachable", apierrors.NewInternalError(errors.New("failed to decrypt DEK, error: rpc error: code = Unavailable desc = connection error")), true, "", false},
		{"KMS plugin too slow", apierrors.NewInternalError(errors.New("failed to decrypt DEK, error: rpc error: code = DeadlineExceeded desc = context deadline exceeded")), true, "", false},
		{"KMS plugin refuses", apierrors.NewInternalError(errors.New("failed to decrypt DEK, error: rpc error: code = PermissionDenied desc = no")), false, metrics.RelistError, false},
		{"unknown key", apierrors.NewInternalError(errors.New("the provided value does not match any of the supported transformers")), false, metrics.RelistError, false},
		{"wrong key", apierrors.NewInternalError(errors.New("cipher: message authentication failed")), false, metrics.RelistError, false},
		{"plain error", errors.New("etcdserver: no leader"), false, metrics.RelistError, false},
		{"bad request", apierrors.NewBadRequest("no"), false, metrics.RelistError, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := classify(tc.err)
			if got.transient != tc.transient || got.relist != tc.relist || got.leaderless != tc.leaderless {
				t.Fatalf("classify(%v) = transient %v, relist %q, leaderless %v; want %v, %q, %v",
					tc.err, got.transient, got.relist, got.leaderless, tc.transient, tc.relist, tc.leaderless)
			}
		})
	}
}
