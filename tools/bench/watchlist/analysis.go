package watchlist

import clusterbench "github.com/freshcache/freshcache/tools/bench/cluster"

// SLOMs is KEP-2340's bound on a consistent read's wait, the target the
// issue sets for the reads while WatchLists run.
const SLOMs = 200

// Derived are the figures a configuration's targets are judged by.
//
// The WatchLists' CPU is measured on its own, not inferred from the
// reads: phase C runs the WatchLists alone, which gives the apiserver's
// CPU per watch event (above the writes-only idle), and phase B's events
// times that is what the WatchLists cost there. If the reads lose only
// the CPU the WatchLists take, ThroughputDrop stays at or below
// WatchListCPUShare; a larger drop means reads waited on something else,
// such as a cache that fell behind.
type Derived struct {
	// WorstP99Ms is the largest client-side p99 over the read kinds with
	// the WatchLists running (phase B), WorstKind its read kind;
	// BaselineP99Ms the same without them (phase A).
	WorstP99Ms    float64
	WorstKind     string
	BaselineP99Ms float64
	// ThroughputDrop is 1 - (reads/s in B) / (reads/s in A), all kinds.
	ThroughputDrop float64
	// WatchListCPUPerEventUs is the apiserver's CPU per event delivered
	// to a WatchList, in microseconds (phase C).
	WatchListCPUPerEventUs float64
	// WatchListCores is what the WatchLists took of the apiserver in B;
	// WatchListCPUShare that over the apiserver's CPU in B (at most 1).
	WatchListCores    float64
	WatchListCPUShare float64
	// HasCPUShare is false when phase C delivered no events (or is
	// missing), so that no share could be measured.
	HasCPUShare bool
	// MeetsSLO: WorstP99Ms < SLOMs. MeetsCPU: ThroughputDrop <=
	// WatchListCPUShare.
	MeetsSLO, MeetsCPU bool
}

// Derive computes a run's derived figures from its phases; the zero
// Derived when phase A or B is missing.
func Derive(r ConfigRun) Derived {
	var d Derived
	a, b := r.Phase(PhaseBaseline), r.Phase(PhaseContended)
	if a == nil || b == nil {
		return d
	}
	d.BaselineP99Ms, _ = worstP99(a)
	d.WorstP99Ms, d.WorstKind = worstP99(b)
	if ra := a.ReadsPerSec(); ra > 0 {
		d.ThroughputDrop = 1 - b.ReadsPerSec()/ra
	}
	idle, c := r.Phase(PhaseIdle), r.Phase(PhaseAlone)
	if c != nil && c.WatchList.Events > 0 {
		base := 0.0
		if idle != nil {
			base = idle.CPU.APIServer
		}
		perEvent := max(0, c.CPU.APIServer-base) * c.Seconds / float64(c.WatchList.Events)
		d.WatchListCPUPerEventUs = perEvent * 1e6
		if b.Seconds > 0 {
			d.WatchListCores = perEvent * float64(b.WatchList.Events) / b.Seconds
		}
		if b.CPU.APIServer > 0 {
			d.WatchListCPUShare = min(1, d.WatchListCores/b.CPU.APIServer)
		}
		d.HasCPUShare = true
	}
	d.MeetsSLO = len(b.Reads) > 0 && d.WorstP99Ms < SLOMs
	d.MeetsCPU = d.HasCPUShare && d.ThroughputDrop <= d.WatchListCPUShare
	return d
}

// worstP99 is the largest p99 over a phase's read kinds, and which.
func worstP99(p *PhaseResult) (float64, string) {
	var worst float64
	kind := ""
	for _, r := range p.Reads {
		if kind == "" || r.P99Ms > worst {
			worst, kind = r.P99Ms, r.Kind
		}
	}
	return worst, kind
}

// ComputeRatios picks the closing line's figures: those of
// freshcache-fresh-rv0 (or, without it, the last freshcache
// configuration that ran), and upstream's worst read p99 with WatchLists.
func ComputeRatios(runs []ConfigRun) Ratios {
	var r Ratios
	pick := -1
	for i, run := range runs {
		switch run.Config {
		case clusterbench.Upstream:
			r.UpstreamReadP99Ms = Derive(run).WorstP99Ms
		case clusterbench.FreshRV0:
			pick = i
		default:
			if pick < 0 || runs[pick].Config != clusterbench.FreshRV0 {
				pick = i
			}
		}
	}
	if pick >= 0 {
		d := Derive(runs[pick])
		r.Config = runs[pick].Config
		r.ReadP99Ms, r.ThroughputDrop, r.WatchListCPUShare = d.WorstP99Ms, d.ThroughputDrop, d.WatchListCPUShare
	}
	return r
}
