package freshness

// Two indexed min-heaps over unresolved reads. Each read stores its position
// in both, so a cancelled or timed-out read is removed exactly, in
// O(log n), and neither heap ever holds a resolved read.

// readOrder is what makes a readHeap one of the two: how it orders reads,
// and which of a read's fields holds its position in it.
type readOrder interface {
	less(a, b *read) bool
	index(r *read) *int
}

// readHeap is a heap.Interface over reads in the order O; each read's
// position in it is kept up to date in O's index field, -1 once popped.
type readHeap[O readOrder] []*read

func (h readHeap[O]) Len() int           { return len(h) }
func (h readHeap[O]) Less(i, j int) bool { var o O; return o.less(h[i], h[j]) }
func (h readHeap[O]) Swap(i, j int) {
	var o O
	h[i], h[j] = h[j], h[i]
	*o.index(h[i]) = i
	*o.index(h[j]) = j
}

func (h *readHeap[O]) Push(x any) {
	var o O
	r := x.(*read)
	*o.index(r) = len(*h)
	*h = append(*h, r)
}

func (h *readHeap[O]) Pop() any {
	var o O
	old := *h
	n := len(old)
	r := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	*o.index(r) = -1
	return r
}

// byTarget orders reads in StageCache by target revision, so that an
// advance of c releases a prefix.
type byTarget struct{}

func (byTarget) less(a, b *read) bool { return a.target < b.target }
func (byTarget) index(r *read) *int   { return &r.targetIdx }

// byDeadline orders reads that have a deadline by deadline.
type byDeadline struct{}

func (byDeadline) less(a, b *read) bool { return a.Deadline.Before(b.Deadline) }
func (byDeadline) index(r *read) *int   { return &r.deadlineIdx }

type (
	targetHeap   = readHeap[byTarget]
	deadlineHeap = readHeap[byDeadline]
)
