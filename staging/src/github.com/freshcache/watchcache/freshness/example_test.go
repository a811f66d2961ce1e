package freshness_test

import (
	"fmt"
	"time"

	"github.com/freshcache/watchcache/freshness"
)

// A consistent read through the Machine: the caller carries out each Output
// (issue the fetch, send the progress request) and reports what happened;
// the Machine says when the read may be served.
func ExampleMachine() {
	m, err := freshness.New(freshness.Options{Revision: 10}) // the cache listed at 10
	if err != nil {
		panic(err)
	}
	now := time.Unix(0, 0)
	_ = m.ReadArrived(freshness.Read{ID: 1, Kind: freshness.Consistent, Deadline: now.Add(3 * time.Second)})

	rd := m.Output()
	fmt.Println("issue a fetch:", rd.IssueFetch)
	_, _ = m.FetchIssued()       // before the linearizable request leaves
	_ = m.FetchAnswered(12, now) // etcd is at 12, the cache at 10

	rd = m.Output()
	fmt.Println("send a progress request:", rd.SendProgress, "released:", len(rd.Released))
	_ = m.ProgressRequestSent(now)
	m.EventApplied(11)     // an event of the resource
	m.ProgressNotified(12) // etcd: every event up to 12 was delivered
	m.ProgressAnswered()

	for _, r := range m.Output().Released {
		fmt.Printf("read %d released: target %d, cache at %d\n", r.ID, r.Target, r.RV)
	}
	// Output:
	// issue a fetch: true
	// send a progress request: true released: 0
	// read 1 released: target 12, cache at 12
}
