package freshness

// Two indexed min-heaps over unresolved reads. Each read stores its position
// in both, so a cancelled or timed-out read is removed exactly, in
// O(log n), and neither heap ever holds a resolved read.

// targetHeap orders reads in StageCache by target revision, so that an
// advance of c releases a prefix.
type targetHeap []*read

func (h targetHeap) Len() int           { return len(h) }
func (h targetHeap) Less(i, j int) bool { return h[i].target < h[j].target }
func (h targetHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].targetIdx = i
	h[j].targetIdx = j
}

func (h *targetHeap) Push(x any) {
	r := x.(*read)
	r.targetIdx = len(*h)
	*h = append(*h, r)
}

func (h *targetHeap) Pop() any {
	old := *h
	n := len(old)
	r := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	r.targetIdx = -1
	return r
}

// deadlineHeap orders reads that have a deadline by deadline.
type deadlineHeap []*read

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(i, j int) bool { return h[i].Deadline.Before(h[j].Deadline) }
func (h deadlineHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].deadlineIdx = i
	h[j].deadlineIdx = j
}

func (h *deadlineHeap) Push(x any) {
	r := x.(*read)
	r.deadlineIdx = len(*h)
	*h = append(*h, r)
}

func (h *deadlineHeap) Pop() any {
	old := *h
	n := len(old)
	r := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	r.deadlineIdx = -1
	return r
}
