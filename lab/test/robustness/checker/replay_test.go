package checker

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/freshcache/freshcache/lab/internal/testenv"
	h "github.com/freshcache/freshcache/lab/test/robustness/record"
)

// TestReplayReport re-checks a dumped run offline:
//
//	ROBUSTNESS_REPLAY=/path/to/report/history.json go test -run TestReplayReport -v ./test/robustness/checker/
//
// For every key whose history porcupine rejects, it prints the shortest
// prefix (by call time) that is already not linearizable, ending with the
// operation that breaks it.
func TestReplayReport(t *testing.T) {
	path := testenv.Skip(t, "ROBUSTNESS_REPLAY", "set ROBUSTNESS_REPLAY to a report's history.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var run h.Run
	if err := json.Unmarshal(b, &run); err != nil {
		t.Fatal(err)
	}
	r := Check(&run, Options{})
	if p := r.Porcupine; p != nil {
		t.Logf("porcupine: %s over %d key operations in %d segments", p.Result, p.Ops, p.Segments)
	}
	t.Logf("%s seed %d: %d ops, %d sessions; violations %v", run.Variant, run.Seed, len(run.Ops), len(run.Sessions), r.Counts)
	for _, n := range Names {
		for _, d := range r.Details[n] {
			t.Logf("%s: %s", n, d)
		}
	}
	if r.Porcupine == nil {
		return
	}
	for _, f := range r.Porcupine.Failures {
		part := f.Ops
		lo, hi := 1, len(part) // smallest failing prefix length
		for lo < hi {
			mid := (lo + hi) / 2
			if porcupine.CheckOperations(f.Model, part[:mid]) {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		t.Logf("key %s: first %d of %d operations of the segment are not linearizable; the last ones:", f.Name, lo, len(part))
		for _, op := range part[max(0, lo-30):lo] {
			t.Logf("  [%d, %d] client %d: %s", op.Call, op.Return, op.ClientId, Model.DescribeOperation(op.Input, op.Output))
		}
	}
}
