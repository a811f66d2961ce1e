package counters

// Delta is after less before per key, keeping only the keys that moved.
func Delta[V int64 | float64](before, after map[string]V) map[string]V {
	out := map[string]V{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}
