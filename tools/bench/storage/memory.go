package storage

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"time"
)

// MemoryRow is the heap a backend's cache holds for a data set.
type MemoryRow struct {
	Backend string `json:"backend"`
	Pods    int    `json:"pods"`
	Nodes   int    `json:"nodes"`
	// HeapBefore and HeapAfter are runtime.MemStats.HeapAlloc after a
	// forced GC, before the backend was built and once it was ready.
	HeapBefore uint64 `json:"heap_before_bytes"`
	HeapAfter  uint64 `json:"heap_after_bytes"`
	// BytesPerObject is (HeapAfter - HeapBefore) / Pods.
	BytesPerObject float64 `json:"bytes_per_object"`
	ReadySeconds   float64 `json:"ready_seconds"`
}

// settledHeap runs the GC until HeapAlloc stops shrinking (at most 5
// rounds) and returns it, so that garbage from loading or from the
// previous backend does not count.
func settledHeap() uint64 {
	var ms runtime.MemStats
	prev := ^uint64(0)
	for range 5 {
		runtime.GC()
		debug.FreeOSMemory()
		runtime.ReadMemStats(&ms)
		if ms.HeapAlloc >= prev*99/100 {
			break
		}
		prev = ms.HeapAlloc
	}
	return ms.HeapAlloc
}

// MeasureMemory builds each backend in turn on env, waits until its cache
// is ready, and records the heap it added. Each backend is destroyed before
// the next is built.
func MeasureMemory(ctx context.Context, env *Env, backends []string, progress io.Writer) ([]MemoryRow, error) {
	if progress == nil {
		progress = io.Discard
	}
	var rows []MemoryRow
	for _, name := range backends {
		before := settledHeap()
		t0 := time.Now()
		b, err := env.newPodBackend(ctx, name, 10*time.Minute, "")
		if err != nil {
			return rows, err
		}
		ready := time.Since(t0)
		// The cache is ready once its initial list is applied; settle the
		// garbage that list made.
		after := settledHeap()
		runtime.KeepAlive(b)
		r := MemoryRow{
			Backend: name, Pods: env.Shape.Pods, Nodes: env.Shape.Nodes,
			HeapBefore: before, HeapAfter: after, ReadySeconds: ready.Seconds(),
		}
		if after > before {
			r.BytesPerObject = float64(after-before) / float64(env.Shape.Pods)
		}
		fmt.Fprintf(progress, "memory: %s pods=%d heap +%.1f MiB = %.0f bytes/object (ready in %.1fs)\n",
			name, r.Pods, float64(after-before)/(1<<20), r.BytesPerObject, r.ReadySeconds)
		rows = append(rows, r)
		b.destroy()
	}
	return rows, nil
}
