// Package quantile turns the benchmarks' latencies into the quantiles
// their reports show: exact ones of measured samples (the nearest-rank
// percentile, the median), and, for what a server only exports as a
// Prometheus histogram, the estimate PromQL's histogram_quantile makes
// from its cumulative buckets (Histogram).
//
// # Who calls it
//
// The storage, apiserver and cluster benchmarks (and package
// servermetrics for them), and the stall and watchlist scenarios.
//
// # What it guarantees
//
//   - Percentile answers one of the samples (nearest rank); it never
//     interpolates.
//   - Histogram.Quantile is histogram_quantile's estimate: linear inside
//     the bucket the rank falls in, from 0 for the first bucket; a rank in
//     the +Inf bucket answers the largest finite bound.
//   - Nothing here reads a clock or does I/O, and no function changes the
//     slice or histogram it is given (but Add, which adds to its receiver).
package quantile
