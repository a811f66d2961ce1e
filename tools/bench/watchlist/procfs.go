package watchlist

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/freshcache/freshcache/tools/bench/procfs"
)

// CPU and memory of the processes under test, from /proc (package
// procfs; the machine's busy ticks are counted here, without the guest
// fields that user and nice already hold).

// machineBusyTicks is the busy (all but idle and iowait) ticks of all
// cores from /proc/stat's "cpu" line.
func machineBusyTicks() (float64, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	return parseMachineStat(string(b))
}

func parseMachineStat(stat string) (float64, bool) {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, false
	}
	var busy float64
	// user nice system idle iowait irq softirq steal (guest is inside user).
	for i, v := range f[1:min(len(f), 9)] {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, false
		}
		if i != 3 && i != 4 {
			busy += n
		}
	}
	return busy, true
}

// cpuSample is the CPU ticks of every party at one instant.
type cpuSample struct {
	at                          time.Time
	apiserver, etcd, self, busy float64
}

// cpuProbe samples the apiserver, the local-up process (its embedded
// etcd), this process and the machine, and tracks the apiserver's peak
// RSS between resets.
type cpuProbe struct {
	apiserverPID, localUpPID int

	mu struct {
		sync.Mutex
		peakRSS float64 // MiB since the last takePeak
	}
}

func (p *cpuProbe) sample() cpuSample {
	s := cpuSample{at: time.Now()}
	s.apiserver = procfs.CPUTicks([]int{p.apiserverPID})
	s.etcd = procfs.CPUTicks([]int{p.localUpPID})
	s.self = procfs.CPUTicks([]int{os.Getpid()})
	s.busy, _ = machineBusyTicks()
	return s
}

// watchRSS samples the apiserver's RSS every second until ctx is done.
func (p *cpuProbe) watchRSS(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		p.notePeak(procfs.RSSMB(p.apiserverPID))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (p *cpuProbe) notePeak(v float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.peakRSS = max(p.mu.peakRSS, v)
}

// takePeak returns the peak RSS since the last call and starts a new one
// at the current RSS.
func (p *cpuProbe) takePeak() float64 {
	now := procfs.RSSMB(p.apiserverPID)
	p.mu.Lock()
	defer p.mu.Unlock()
	peak := max(p.mu.peakRSS, now)
	p.mu.peakRSS = now
	return peak
}

// cpuStats turns two samples into cores per party.
func cpuStats(before, after cpuSample) CPUStats {
	secs := after.at.Sub(before.at).Seconds()
	if secs <= 0 {
		return CPUStats{}
	}
	cores := func(a, b float64) float64 { return (b - a) / procfs.ClockTicksPerSec / secs }
	c := CPUStats{
		APIServer: cores(before.apiserver, after.apiserver),
		Etcd:      cores(before.etcd, after.etcd),
		Bench:     cores(before.self, after.self),
	}
	c.Other = max(0, cores(before.busy, after.busy)-c.APIServer-c.Etcd-c.Bench)
	return c
}
