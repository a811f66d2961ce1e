package watchlist

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

func TestReadStatsCountCutReadsAsLowerBounds(t *testing.T) {
	lat := make([]time.Duration, 0, 100)
	for range 98 {
		lat = append(lat, time.Millisecond)
	}
	// Two reads still waiting when the phase ended, after 4 s and 5 s.
	lat = append(lat, 4*time.Second, 5*time.Second)
	tallies := map[string]*readTally{}
	for _, k := range AllReads {
		tallies[k] = &readTally{}
	}
	tallies[ReadGetSecret] = &readTally{lat: lat, ops: 98, cut: 2, errs: 1, firstErr: "boom"}
	got := readStats(tallies, 2)
	if len(got) != len(AllReads) || got[0].Kind != ReadGetSecret {
		t.Fatalf("stats %+v", got)
	}
	s := got[0]
	if s.Ops != 98 || s.Cut != 2 || s.OpsPerSec != 49 || s.Errors != 1 || s.FirstError != "boom" {
		t.Fatalf("counts %+v", s)
	}
	// The cut reads are the tail: p99 is the first of them, max the second.
	if s.P50Ms != 1 || s.P99Ms != 4000 || s.MaxMs != 5000 {
		t.Fatalf("latencies %+v", s)
	}
	if e := got[1]; e.Ops != 0 || e.P99Ms != 0 || e.OpsPerSec != 0 {
		t.Fatalf("a kind without reads: %+v", e)
	}
}

// TestReadsCheckTheirAnswers runs every read kind against a fake server
// holding the small namespace, then against one holding an object too
// few: the GETs still find theirs, the LISTs count wrong.
func TestReadsCheckTheirAnswers(t *testing.T) {
	const small = 2
	var objs []runtime.Object
	for i := range small {
		meta := metav1.ObjectMeta{Namespace: smallNamespace, Name: smallName(i)}
		objs = append(objs, &corev1.Secret{ObjectMeta: meta}, &corev1.ConfigMap{ObjectMeta: meta})
	}
	ctx := context.Background()
	rnd := rand.New(rand.NewPCG(1, 2))
	for kind, read := range newReaders(small).kinds {
		if err := read(ctx, fake.NewClientset(objs...), rnd); err != nil {
			t.Errorf("%s on the full namespace: %v", kind, err)
		}
	}
	for kind, read := range newReaders(small + 1).kinds {
		err := read(ctx, fake.NewClientset(objs...), rand.New(rand.NewPCG(0, 0)))
		if strings.HasPrefix(kind, "LIST") && (err == nil || !strings.Contains(err.Error(), "LIST answered 2 ")) {
			t.Errorf("%s with an object missing: %v, want a wrong count", kind, err)
		}
	}
}
