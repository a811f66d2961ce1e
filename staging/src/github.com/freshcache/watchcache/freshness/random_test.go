package freshness

import (
	"flag"
	"math/rand/v2"
	"testing"
	"time"
)

var (
	seedFlag = flag.Uint64("freshness.seed", 0, "replay TestRandomizedInterleavings with this seed only")
	runsFlag = flag.Int("freshness.runs", 400, "number of seeds TestRandomizedInterleavings tries")
)

// TestRandomizedInterleavings runs many random interleavings of reads,
// writes, fetches, events, progress requests, ticks and cancellations, and
// checks after every step, through harness.check:
//
//	(a) a Consistent read uses only the answer of a fetch issued after it
//	    arrived, and so sees every write that completed before it arrived;
//	(b) no read is released before c >= its target;
//	(c) at most one fetch and one progress request are in flight, and each is
//	    asked for exactly when the protocol says;
//	(c') a patient read outwaits unanswered fetches (only an answer gives
//	    it a deadline, the answer's time plus CatchUp), and is failed only
//	    by a failed fetch;
//	(d) liveness: once fetches and progress requests are answered, every
//	    read resolves (harness.drain).
//
// A failure prints the seed; replay it with -freshness.seed.
func TestRandomizedInterleavings(t *testing.T) {
	seeds := make([]uint64, 0, *runsFlag)
	if *seedFlag != 0 {
		seeds = append(seeds, *seedFlag)
	} else {
		base := uint64(time.Now().UnixNano())
		for i := range *runsFlag {
			seeds = append(seeds, base+uint64(i))
		}
	}
	var total harness
	for _, seed := range seeds {
		h, err := runRandom(seed)
		if err != nil {
			t.Fatalf("seed %d: %v\nreplay: go test ./freshness -run TestRandomizedInterleavings -freshness.seed=%d", seed, err, seed)
		}
		total.released += h.released
		total.failed += h.failed
		total.timedOut += h.timedOut
		total.cancelled += h.cancelled
		total.requeued += h.requeued
	}
	t.Logf("%d seeds: released %d, failed %d, timed out %d, cancelled %d, patient reads sent on to the next fetch %d",
		len(seeds), total.released, total.failed, total.timedOut, total.cancelled, total.requeued)
	if *seedFlag == 0 && (total.released == 0 || total.failed == 0 || total.timedOut == 0 || total.cancelled == 0 || total.requeued == 0) {
		t.Errorf("some outcome never happened; the generator is too weak")
	}
}

func runRandom(seed uint64) (*harness, error) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	// Each run draws its own weights, so that some runs are read-heavy,
	// some answer slowly, some time out a lot.
	var weights [numOps]int
	sum := 0
	for i := range weights {
		weights[i] = 1 + rng.IntN(10)
		sum += weights[i]
	}
	// One run in four has progress notifications untrusted: the Machine
	// must never ask for a progress request, and events end the waits.
	h := newHarnessWith(Options{NoProgress: rng.IntN(4) == 0})
	steps := 50 + rng.IntN(400)
	for range steps {
		x := rng.IntN(sum)
		op := 0
		for x >= weights[op] {
			x -= weights[op]
			op++
		}
		if err := h.do(byte(op), byte(rng.IntN(256))); err != nil {
			return h, err
		}
	}
	return h, h.drain()
}
