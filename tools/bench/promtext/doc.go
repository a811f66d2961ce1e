// Package promtext reads a server's /metrics page in the Prometheus text
// exposition format, the way every benchmark here does: one GET asking
// for the text format (Get), the page parsed into metric families
// (Parse), and a series' label looked up by name (Label). What a
// benchmark makes of the series is its own.
//
// It is not lab/internal/scrape of the repository's root module, which keys
// samples by their exposed text for tests that compare counters: the
// benchmarks need labels by name and histogram buckets, which the parsed
// families give.
//
// # Who calls it
//
// Package servermetrics (for the storage, apiserver and cluster
// benchmarks), the cluster benchmark, and the stall and watchlist
// scenarios.
//
// # What it guarantees
//
//   - Get asks for the text format (Accept: text/plain), not protobuf or
//     OpenMetrics, and hands back only a 200 answer's body, for the caller
//     to read and close; any other answer's body is read and dropped, so
//     that the connection can serve the next scrape.
//   - Its errors do not name the page: the caller does, in its own words.
//   - Parse reads metric names as UTF-8, as the Prometheus server does.
package promtext
