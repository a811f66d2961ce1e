package stall

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// Ratios compare freshcache's default with upstream's default.
type Ratios struct {
	// APIServerRSSGrowth and EtcdRSSGrowth are freshcache's growth
	// divided by upstream's; nil when either did not run.
	APIServerRSSGrowth *float64 `json:"apiserver_rss_growth,omitempty"`
	EtcdRSSGrowth      *float64 `json:"etcd_rss_growth,omitempty"`
	// Freshcache5xx is freshcache's 5xx count; nil when it did not run.
	Freshcache5xx *int `json:"freshcache_5xx,omitempty"`
	// BudgetAPIServer and BudgetEtcd are freshcache's growth divided by
	// freshcache-unbounded's: what the fallback budget buys.
	BudgetAPIServer *float64 `json:"budget_apiserver_rss_growth,omitempty"`
	BudgetEtcd      *float64 `json:"budget_etcd_rss_growth,omitempty"`
}

// ComputeRatios compares the Freshcache and Upstream results of configs.
func ComputeRatios(configs []ConfigResult) Ratios {
	var r Ratios
	f, fok := find(configs, Freshcache)
	u, uok := find(configs, Upstream)
	if fok {
		n := f.Reads.Err5xx
		r.Freshcache5xx = &n
	}
	if fok && uok {
		r.APIServerRSSGrowth = ratioOf(f.APIServer.Growth, u.APIServer.Growth)
		r.EtcdRSSGrowth = ratioOf(f.Etcd.Growth, u.Etcd.Growth)
	}
	if nb, ok := find(configs, FreshcacheUnbounded); ok && fok {
		r.BudgetAPIServer = ratioOf(f.APIServer.Growth, nb.APIServer.Growth)
		r.BudgetEtcd = ratioOf(f.Etcd.Growth, nb.Etcd.Growth)
	}
	return r
}

// find returns the configuration that ran to the end under name.
func find(configs []ConfigResult, name string) (ConfigResult, bool) {
	for _, c := range configs {
		if c.Name == name && c.Skipped == "" && c.Error == "" {
			return c, true
		}
	}
	return ConfigResult{}, false
}

func ratioOf(a, b float64) *float64 {
	if a <= 0 || b <= 0 {
		return nil
	}
	v := a / b
	return &v
}

// ClosingLine is the report's last line.
func (r Ratios) ClosingLine() string {
	f := func(p *float64) string {
		if p == nil {
			return "n/a"
		}
		return fmt.Sprintf("%.2f", *p)
	}
	n := "n/a"
	if r.Freshcache5xx != nil {
		n = fmt.Sprint(*r.Freshcache5xx)
	}
	return fmt.Sprintf("stall ratios: apiserver-rss-growth=%s etcd-rss-growth=%s (freshcache/upstream) 5xx=%s",
		f(r.APIServerRSSGrowth), f(r.EtcdRSSGrowth), n)
}

// WriteJSON writes r to path, indented.
func WriteJSON(path string, r Result) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// secs shows milliseconds as seconds.
func secs(m Millis) string { return fmt.Sprintf("%.2f", float64(m)/1000) }

// outcomeOrder is the order outcomes are shown in.
var outcomeOrder = []string{OutcomeCache, OutcomeFallback, OutcomeOverBudget, OutcomeRejected, OutcomeError}

func outcomes(m map[string]float64) string {
	if len(m) == 0 {
		return "–"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		ia, ib := slices.Index(outcomeOrder, a), slices.Index(outcomeOrder, b)
		if ia < 0 {
			ia = len(outcomeOrder)
		}
		if ib < 0 {
			ib = len(outcomeOrder)
		}
		if ia != ib {
			return ia - ib
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.0f", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// WriteTable writes the results table in markdown.
func WriteTable(w io.Writer, configs []ConfigResult) error {
	var b strings.Builder
	b.WriteString("| configuration | apiserver RSS MiB, pre → peak | growth | etcd RSS MiB, pre → peak | growth | etcd sent from stall, MB | 2xx | 429 | 5xx | other | p99 of 2xx, s: steady / from stall | back to pre-stall latency, s | apiserver's count from stall on |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range configs {
		if c.Skipped != "" {
			fmt.Fprintf(&b, "| %s | skipped: %s ||||||||||||\n", c.Name, oneLine(c.Skipped))
			continue
		}
		rec := "never"
		if c.Recovery != nil {
			rec = secs(*c.Recovery)
		}
		name := c.Name
		if c.Error != "" {
			name += " (stopped early)"
		}
		fmt.Fprintf(&b, "| %s | %.0f → %.0f | %.2f× | %.0f → %.0f | %.2f× | %.0f | %d | %d | %d | %d | %s / %s | %s | %s |\n",
			name, mib(c.APIServer.Pre), mib(c.APIServer.Peak), c.APIServer.Growth,
			mib(c.Etcd.Pre), mib(c.Etcd.Peak), c.Etcd.Growth, c.EtcdSentFromStall/1e6,
			c.Reads.OK, c.Reads.Retry, c.Reads.Err5xx, c.Reads.Other,
			secs(c.P99Steady), secs(c.P99FromStall), rec, outcomes(c.OutcomesFromStall))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "|", "/")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
