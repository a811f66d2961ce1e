package procfs

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ClockTicksPerSec is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on
// every Linux architecture Go supports (the kernel's ABI, whatever CONFIG_HZ).
const ClockTicksPerSec = 100

// CPUTicks sums utime+stime of pids (clock ticks); a pid that is gone
// counts nothing.
func CPUTicks(pids []int) float64 {
	var sum float64
	for _, p := range pids {
		data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "stat"))
		if err != nil {
			continue
		}
		if t, ok := parseStatTicks(string(data)); ok {
			sum += t
		}
	}
	return sum
}

// parseStatTicks reads utime+stime (fields 14 and 15, in clock ticks) of a
// /proc/<pid>/stat line. The command name (field 2) is in parentheses and
// may itself hold spaces and parentheses, so fields count from the last
// ')'.
func parseStatTicks(stat string) (float64, bool) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(stat[i+1:])
	if len(f) <= 12 {
		return 0, false
	}
	u, err1 := strconv.ParseFloat(f[11], 64)
	k, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return u + k, true
}

// MachineTicks are the idle (idle+iowait) and total ticks of all cores.
func MachineTicks() (idle, total float64) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line := strings.SplitN(string(data), "\n", 2)[0]
	for i, f := range strings.Fields(line)[1:] {
		v, _ := strconv.ParseFloat(f, 64)
		total += v
		if i == 3 || i == 4 {
			idle += v
		}
	}
	return idle, total
}

// RSSMB is the process's resident memory (VmRSS), MB.
func RSSMB(pid int) float64 { return StatusMB(pid, "VmRSS:") }

// StatusMB is the field key ("VmRSS:", "RssAnon:", "VmHWM:") of
// /proc/<pid>/status, MB.
func StatusMB(pid int, key string) float64 {
	return statusKB(filepath.Join("/proc", strconv.Itoa(pid), "status"), key) / 1024
}

// StatusBytes is the field key ("VmRSS:", "VmHWM:") of /proc/<pid>/status
// in bytes, exact; 0 when the process or the key is gone.
func StatusBytes(pid int, key string) int64 {
	return int64(statusKB(filepath.Join("/proc", strconv.Itoa(pid), "status"), key)) * 1024
}

// MemAvailableMB is the machine's MemAvailable, MB.
func MemAvailableMB() float64 { return statusKB("/proc/meminfo", "MemAvailable:") / 1024 }

// Alive tells whether pid still exists (for a clear error when a server
// died mid-run instead of a zero CPU figure).
func Alive(pid int) bool {
	_, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid)))
	return err == nil
}

func statusKB(path, key string) float64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return parseStatusKB(string(data), key)
}

// parseStatusKB is the number after key ("VmRSS:") in a /proc status or
// meminfo text, in kB; zero when the key is absent.
func parseStatusKB(text, key string) float64 {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, key); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				kb, _ := strconv.ParseFloat(f[0], 64)
				return kb
			}
		}
	}
	return 0
}
