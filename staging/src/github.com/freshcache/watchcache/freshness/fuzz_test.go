package freshness

import "testing"

// FuzzMachine reads its input as (op, arg) byte pairs, plays them through the
// harness (which checks every property after every step) and then checks
// liveness. Run with: go test ./freshness -run '^$' -fuzz FuzzMachine
func FuzzMachine(f *testing.F) {
	// Seed corpus: the scripted scenarios, in op/arg form (see opNames).
	f.Add([]byte{0, 1, 3, 1, 2, 0, 0, 1, 4, 0, 6, 0, 7, 1, 8, 0, 3, 1, 4, 0})                     // fast path, then a read during a fetch
	f.Add([]byte{0, 1, 2, 0, 3, 1, 0, 1, 2, 0, 4, 0, 3, 1, 4, 3, 7, 1, 8, 0})                     // read arriving mid-fetch uses the next fetch
	f.Add([]byte{0, 1, 0, 2, 3, 1, 5, 0, 3, 1, 4, 0})                                             // a failed fetch fails only what it covered
	f.Add([]byte{1, 7, 2, 0, 2, 0, 7, 1, 9, 0, 8, 1, 6, 3})                                       // NotOlderThan waits for c
	f.Add([]byte{0, 5, 1, 9, 10, 4, 10, 19, 10, 19, 10, 19})                                      // deadlines
	f.Add([]byte{0, 4, 0, 4, 11, 0, 3, 1, 11, 1, 4, 0, 11, 0, 7, 1, 11, 3})                       // cancellations
	f.Add([]byte{3, 1, 3, 1, 4, 0, 4, 0, 5, 0, 7, 1, 7, 1, 8, 0, 8, 0, 9, 3, 6, 0})               // protocol misuse is refused
	f.Add([]byte{0, 6, 0, 2, 3, 1, 13, 0, 3, 1, 13, 0, 10, 19, 3, 1, 2, 0, 4, 3, 10, 19, 10, 19}) // patient read outwaits unanswered fetches
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			data = data[:4096]
		}
		h := newHarness()
		for i := 0; i+1 < len(data); i += 2 {
			if err := h.do(data[i], data[i+1]); err != nil {
				t.Fatal(err)
			}
		}
		if err := h.drain(); err != nil {
			t.Fatal(err)
		}
	})
}
