package oracle

import (
	"context"
	"errors"
	"github.com/freshcache/watchcache/internal/testing/etcdcluster"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestPartitionedMember shows, side by side, why the revision fetch must be
// linearizable (docs/design.md, "Why the revision request must be
// linearizable").
//
// A 3-member cluster runs with its peer traffic through proxies. Two
// Oracles share a client that talks only to one follower: one fetches
// linearizably (production), the other serializably. The follower is cut
// off from its peers in both directions, and a key it holds is deleted
// through the majority. Then:
//
//   - the serializable Oracle answers with the follower's stale revision,
//     older than the delete, and a serializable read there still returns the
//     deleted key. A cache watching that member would look fresh against
//     this revision and serve the deleted object (kubernetes#59848);
//   - the linearizable Oracle fails with ErrFetchFailed: the read is
//     delegated or rejected, never served stale. The member holds the
//     read rather than refusing it, so the failure is ErrFetchTimedOut.
//
// After healing, the linearizable Oracle answers again with a revision that
// covers the delete.
func TestPartitionedMember(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-member etcd cluster")
	}
	cl := etcdcluster.Start(t)

	// The leader is the member that sees itself as leader; isolate a
	// follower, as the seed scenario does.
	iso, other := -1, -1
	for i, e := range cl.Members {
		if e.Server.Leader() == e.Server.MemberID() {
			other = i
		} else if iso < 0 {
			iso = i
		}
	}
	if iso < 0 || other < 0 {
		t.Fatalf("no leader/follower pair (leader %d, follower %d)", other, iso)
	}
	cIso := newClient(t, cl.ClientURL(iso))
	cOther := newClient(t, cl.ClientURL(other))

	const key = "/registry/pods/default/x"
	created := put(t, cOther, key)
	lin := newOracle(t, cIso, Options{FetchTimeout: 2 * time.Second})
	ser := newOracle(t, cIso, Options{FetchTimeout: 2 * time.Second, UnsafeSerializable: true})
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	// Before the partition both agree, and the follower has the key.
	if r, err := lin.Revision(ctx); err != nil || r < created {
		t.Fatalf("linearizable before partition: %d, %v (created at %d)", r, err, created)
	}
	if r, err := ser.Revision(ctx); err != nil || r < created {
		t.Fatalf("serializable before partition: %d, %v (created at %d)", r, err, created)
	}

	cl.Isolate(iso)
	t.Logf("isolated member %s (follower); leader is member %s", cl.ID(iso), cl.ID(other))
	del, err := cOther.Delete(ctx, key)
	if err != nil {
		t.Fatalf("delete through the majority: %v", err)
	}
	deleted := del.Header.Revision

	// Serializable: a stale revision, and the deleted key still there.
	serRev, err := ser.Revision(ctx)
	if err != nil {
		t.Fatalf("serializable fetch on the isolated member failed: %v", err)
	}
	if serRev >= deleted {
		t.Fatalf("serializable revision %d covers the delete at %d; the member was not isolated", serRev, deleted)
	}
	got, err := cIso.Get(ctx, key, clientv3.WithSerializable())
	if err != nil || len(got.Kvs) != 1 {
		t.Fatalf("serializable Get on the isolated member: %v, %d keys; want the stale key", err, len(got.Kvs))
	}

	// Linearizable: fails instead of answering stale.
	linRev, linErr := lin.Revision(ctx)
	if !errors.Is(linErr, ErrFetchFailed) {
		t.Fatalf("linearizable fetch on the isolated member: revision %d, err %v; want ErrFetchFailed", linRev, linErr)
	}
	// Held, not refused: the member waits for a leader it cannot reach
	// until the fetch's own timeout, so a watch may ask again.
	if !errors.Is(linErr, ErrFetchTimedOut) {
		t.Fatalf("linearizable fetch on the isolated member: %v; want ErrFetchTimedOut (no answer), not a refusal", linErr)
	}
	t.Logf("after delete at revision %d: serializable fetch answered %d (stale, key still listed); linearizable fetch failed: %v",
		deleted, serRev, linErr)

	// Heal: the linearizable Oracle answers again, fresh.
	cl.Heal()
	deadline := time.Now().Add(waitLimit)
	retry := time.NewTicker(50 * time.Millisecond) // paces fast failures
	defer retry.Stop()
	for ; ; <-retry.C {
		r, err := lin.Revision(ctx)
		if err == nil {
			if r < deleted {
				t.Fatalf("linearizable revision %d after healing misses the delete at %d", r, deleted)
			}
			break
		}
		if !errors.Is(err, ErrFetchFailed) || time.Now().After(deadline) {
			t.Fatalf("linearizable fetch did not recover after healing: %v", err)
		}
	}
}
