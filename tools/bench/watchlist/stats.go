package watchlist

import (
	"slices"
	"time"

	"github.com/freshcache/freshcache/tools/bench/quantile"
)

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// latencySummary sorts lat in place and returns its p50, p99 and max in
// milliseconds.
func latencySummary(lat []time.Duration) (p50, p99, maxMs float64) {
	if len(lat) == 0 {
		return 0, 0, 0
	}
	slices.Sort(lat)
	return ms(quantile.Percentile(lat, 50)), ms(quantile.Percentile(lat, 99)), ms(lat[len(lat)-1])
}
