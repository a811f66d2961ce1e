package freshread

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
)

// Reads the cache sends to etcd (delegated by the plan, or fallen back to
// after a freshness wait) meet etcd's passing troubles: a member that
// rejoins its cluster answers "leader changed" or "no leader" until it has
// caught up with the new term, usually for milliseconds. The etcd3 store
// returns those errors raw, and the apiserver turns an error that is not a
// Kubernetes status into a 500. Upstream's cacher sends few reads there at
// that moment (its waits ended in time); freshcache's fallbacks can land
// right on it. So such a read is tried again within etcdRetryBudget, and
// if etcd is still in trouble the client gets 429 with Retry-After, which
// client-go retries, instead of a 500.

// etcdRetryFirst and etcdRetryBudget: the first pause before a read is
// tried again (doubling after each try), and the longest time spent
// retrying one read.
const (
	etcdRetryFirst  = 25 * time.Millisecond
	etcdRetryBudget = time.Second
)

// passingTrouble reports whether err is an etcd error that a moment
// later may well be gone: no leader, a leader change, an election or a
// request that timed out with it, an overloaded or stopping member, a
// connection that could not be made.
func passingTrouble(err error) bool {
	for _, e := range []error{
		rpctypes.ErrNoLeader, rpctypes.ErrLeaderChanged, rpctypes.ErrNotCapable,
		rpctypes.ErrStopped, rpctypes.ErrTimeout, rpctypes.ErrTimeoutDueToLeaderFail,
		rpctypes.ErrTimeoutDueToConnectionLost, rpctypes.ErrTimeoutWaitAppliedIndex,
		rpctypes.ErrTooManyRequests, rpctypes.ErrUnhealthy,
	} {
		if errors.Is(err, e) {
			return true
		}
	}
	if s, ok := status.FromError(err); ok && s.Code() == codes.Unavailable {
		return true
	}
	return false
}

// Etcd runs read, a read of etcd through the storage the cache was
// given, and tries it again while it fails with passing trouble, within
// etcdRetryBudget and ctx. Trouble that outlasts the budget becomes 429
// with Retry-After; every other outcome is read's own.
func (r *Reader) Etcd(ctx context.Context, read func() error) error {
	err := read()
	if err == nil || !passingTrouble(err) {
		return err
	}
	start := r.cfg.Clock.Now()
	pause := etcdRetryFirst
	for r.cfg.Clock.Since(start)+pause <= etcdRetryBudget {
		t := r.cfg.Clock.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return tooManyRequestsFor(err)
		case <-t.C():
		}
		klog.V(2).InfoS("freshcache: etcd read failed, trying again", "resource", r.cfg.Resource.String(), "err", err)
		if err = read(); err == nil || !passingTrouble(err) {
			return err
		}
		pause *= 2
	}
	return tooManyRequestsFor(err)
}

func tooManyRequestsFor(err error) error {
	return apierrors.NewTooManyRequests(fmt.Sprintf("etcd cannot answer right now: %v", err), retryAfterSeconds)
}
