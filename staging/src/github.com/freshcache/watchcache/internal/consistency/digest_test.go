package consistency

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/freshcache/watchcache/internal/store"
)

func items(kv ...any) []Item {
	var out []Item
	for i := 0; i < len(kv); i += 2 {
		out = append(out, Item{Key: kv[i].(string), RV: uint64(kv[i+1].(int))})
	}
	return out
}

func mustDigest(t *testing.T, its []Item) Digest {
	t.Helper()
	d, err := Of(slices.Values(its))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestConsistencyDigestTellsStatesApart: states that differ in any (key, rv)
// get different digests; equal states get equal ones.
func TestConsistencyDigestTellsStatesApart(t *testing.T) {
	base := items("/pods/a/x", 5, "/pods/a/y", 7, "/pods/b/x", 9)
	cases := []struct {
		name  string
		other []Item
		equal bool
	}{
		{"same items", items("/pods/a/x", 5, "/pods/a/y", 7, "/pods/b/x", 9), true},
		{"an older version", items("/pods/a/x", 5, "/pods/a/y", 6, "/pods/b/x", 9), false},
		{"a key missing", items("/pods/a/x", 5, "/pods/b/x", 9), false},
		{"an extra key", items("/pods/a/x", 5, "/pods/a/y", 7, "/pods/a/z", 8, "/pods/b/x", 9), false},
		{"a key renamed", items("/pods/a/x", 5, "/pods/a/yy", 7, "/pods/b/x", 9), false},
		{"empty", nil, false},
	}
	want := mustDigest(t, base)
	if want.Count != 3 {
		t.Fatalf("count %d, want 3", want.Count)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := mustDigest(t, tc.other)
			if (got == want) != tc.equal {
				t.Fatalf("digest %v vs %v: equal=%v, want %v", got, want, got == want, tc.equal)
			}
			if got.Count != len(tc.other) {
				t.Fatalf("count %d, want %d", got.Count, len(tc.other))
			}
		})
	}
}

// TestConsistencyDigestEncodingIsUnambiguous: the length prefix keeps a
// key's end and a revision's start apart, so that shifting bytes between
// them changes the digest.
func TestConsistencyDigestEncodingIsUnambiguous(t *testing.T) {
	cases := []struct{ a, b []Item }{
		{items("a", 0x31), items("a1", 0)},
		{items("a", 1, "b", 2), items("ab", 1)},
		{items("", 1), nil},
	}
	for i, tc := range cases {
		if da, db := mustDigest(t, tc.a), mustDigest(t, tc.b); da.Hash == db.Hash {
			t.Errorf("case %d: %v and %v share hash %x", i, tc.a, tc.b, da.Hash)
		}
	}
}

// TestConsistencyDigestRefusesUnorderedItems: a digest is only comparable
// over key order, so another order is an error rather than a different
// digest.
func TestConsistencyDigestRefusesUnorderedItems(t *testing.T) {
	for _, its := range [][]Item{
		items("b", 1, "a", 2),
		items("a", 1, "a", 2),
	} {
		if _, err := Of(slices.Values(its)); !errors.Is(err, ErrUnordered) {
			t.Errorf("%v: err = %v, want ErrUnordered", its, err)
		}
	}
}

// TestConsistencyDigestOfSnapshot: a snapshot's items are its objects in key
// order.
func TestConsistencyDigestOfSnapshot(t *testing.T) {
	w := store.NewWriter(nil)
	for _, it := range items("/pods/b", 4, "/pods/a", 3, "/pods/c", 9) {
		if _, err := w.Put(&store.Object{Key: it.Key, RV: it.RV}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Of(SnapshotItems(w.Snapshot()))
	if err != nil {
		t.Fatal(err)
	}
	if want := mustDigest(t, items("/pods/a", 3, "/pods/b", 4, "/pods/c", 9)); got != want {
		t.Fatalf("snapshot digest %v, want %v", got, want)
	}
}

func diff(key string, cacheRV, etcdRV int) *Diff {
	return &Diff{Key: key, CacheRV: uint64(cacheRV), EtcdRV: uint64(etcdRV)}
}

// TestConsistencyComparisonFindsFirstDifference: the lock-step walk reports
// the smallest key where the sides differ, and the digests of both sides in
// full whatever it found.
func TestConsistencyComparisonFindsFirstDifference(t *testing.T) {
	cases := []struct {
		name        string
		cache, etcd []Item
		want        *Diff
	}{
		{"both empty", nil, nil, nil},
		{"equal", items("a", 1, "b", 2), items("a", 1, "b", 2), nil},
		{"cache empty", nil, items("a", 1), diff("a", 0, 1)},
		{"etcd empty", items("a", 1), nil, diff("a", 1, 0)},
		{"etcd has one more first", items("b", 2), items("a", 1, "b", 2), diff("a", 0, 1)},
		{"etcd has one more last", items("a", 1), items("a", 1, "b", 2), diff("b", 0, 2)},
		{"cache has one more in the middle", items("a", 1, "b", 2, "c", 3), items("a", 1, "c", 3), diff("b", 2, 0)},
		{"cache has one more last", items("a", 1, "b", 2), items("a", 1), diff("b", 2, 0)},
		{"stale version", items("a", 1, "b", 2), items("a", 1, "b", 5), diff("b", 2, 5)},
		{"several, first wins", items("a", 1, "c", 3, "d", 4), items("a", 9, "b", 2, "d", 4), diff("a", 1, 9)},
		{"disjoint", items("b", 1, "d", 2), items("a", 1, "c", 2), diff("a", 0, 1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Compare(slices.Values(tc.cache))
			for _, e := range tc.etcd {
				if err := c.Add(e); err != nil {
					t.Fatal(err)
				}
			}
			out, err := c.Finish()
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(out.First) != fmt.Sprint(tc.want) {
				t.Fatalf("first difference %v, want %v", out.First, tc.want)
			}
			if out.Cache != mustDigest(t, tc.cache) || out.Etcd != mustDigest(t, tc.etcd) {
				t.Fatalf("digests %v/%v, want %v/%v", out.Cache, out.Etcd, mustDigest(t, tc.cache), mustDigest(t, tc.etcd))
			}
			if (out.First == nil) != (out.Cache == out.Etcd) {
				t.Fatalf("verdict %v disagrees with digests %v vs %v", out.First, out.Cache, out.Etcd)
			}
		})
	}
}

// TestConsistencyComparisonRefusesUnorderedSides: either side out of key
// order voids the comparison instead of producing a false difference.
func TestConsistencyComparisonRefusesUnorderedSides(t *testing.T) {
	t.Run("etcd", func(t *testing.T) {
		c := Compare(slices.Values(items("a", 1, "b", 2)))
		defer c.Close()
		if err := c.Add(Item{"b", 2}); err != nil {
			t.Fatal(err)
		}
		if err := c.Add(Item{"a", 1}); !errors.Is(err, ErrUnordered) {
			t.Fatalf("err = %v, want ErrUnordered", err)
		}
	})
	t.Run("cache", func(t *testing.T) {
		c := Compare(slices.Values(items("b", 1, "a", 2)))
		_ = c.Add(Item{"a", 2})
		_ = c.Add(Item{"b", 1})
		if _, err := c.Finish(); !errors.Is(err, ErrUnordered) {
			t.Fatalf("err = %v, want ErrUnordered", err)
		}
	})
}

// TestConsistencyComparisonRandom is model-based: random states, one side
// changed at random, and the walk must report exactly the smallest key that
// differs (computed from maps). A failure prints the seed.
func TestConsistencyComparisonRandom(t *testing.T) {
	seed := rand.Uint64()
	r := rand.New(rand.NewPCG(seed, 0))
	t.Logf("seed %d", seed)
	for round := 0; round < 500; round++ {
		cache := map[string]uint64{}
		for i := r.IntN(20); i > 0; i-- {
			cache[fmt.Sprintf("k%02d", r.IntN(30))] = uint64(1 + r.IntN(5))
		}
		etcd := map[string]uint64{}
		for k, v := range cache {
			etcd[k] = v
		}
		for i := r.IntN(3); i > 0; i-- {
			k := fmt.Sprintf("k%02d", r.IntN(30))
			switch r.IntN(3) {
			case 0:
				delete(etcd, k)
			case 1:
				etcd[k] = uint64(1 + r.IntN(5))
			default:
				delete(cache, k)
			}
		}
		var want *Diff
		for _, k := range sortedKeys(cache, etcd) {
			if cache[k] != etcd[k] {
				want = &Diff{Key: k, CacheRV: cache[k], EtcdRV: etcd[k]}
				break
			}
		}
		c := Compare(slices.Values(asItems(cache)))
		for _, e := range asItems(etcd) {
			if err := c.Add(e); err != nil {
				t.Fatalf("seed %d round %d: %v", seed, round, err)
			}
		}
		out, err := c.Finish()
		if err != nil {
			t.Fatalf("seed %d round %d: %v", seed, round, err)
		}
		if fmt.Sprint(out.First) != fmt.Sprint(want) {
			t.Fatalf("seed %d round %d: cache %v etcd %v: first difference %v, want %v", seed, round, cache, etcd, out.First, want)
		}
	}
}

func sortedKeys(ms ...map[string]uint64) []string {
	set := map[string]bool{}
	for _, m := range ms {
		for k := range m {
			set[k] = true
		}
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func asItems(m map[string]uint64) []Item {
	var out []Item
	for _, k := range sortedKeys(m) {
		out = append(out, Item{Key: k, RV: m[k]})
	}
	return out
}
