package counters

import (
	"maps"
	"testing"
)

func TestDelta(t *testing.T) {
	cases := []struct {
		name          string
		before, after map[string]float64
		want          map[string]float64
	}{
		{"nothing moved", map[string]float64{"a": 1}, map[string]float64{"a": 1}, map[string]float64{}},
		{"moved and new", map[string]float64{"a": 1, "b": 2}, map[string]float64{"a": 3, "b": 2, "c": 4}, map[string]float64{"a": 2, "c": 4}},
		{"gone from after", map[string]float64{"a": 1}, map[string]float64{}, map[string]float64{}},
		{"nil before", nil, map[string]float64{"a": 1}, map[string]float64{"a": 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Delta(tc.before, tc.after); !maps.Equal(got, tc.want) {
				t.Fatalf("Delta(%v, %v) = %v, want %v", tc.before, tc.after, got, tc.want)
			}
		})
	}
	if got := Delta(map[string]int64{"x": 5}, map[string]int64{"x": 7}); got["x"] != 2 || len(got) != 1 {
		t.Fatalf("Delta over int64 = %v, want map[x:2]", got)
	}
}
