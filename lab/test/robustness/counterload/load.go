package counterload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// The objects: Namespace holds the counter and the churn objects; the
// ConfigMap Counter's data[Key] is the counter.
const (
	Namespace = "fault-heal"
	Counter   = "counter"
	Key       = "n"
)

// Kind is one of the four reads.
type Kind int

// The four reads, in the order String names them.
const (
	GetConsistent Kind = iota
	GetZero
	ListConsistent
	ListZero
	Kinds // the number of kinds
)

func (k Kind) String() string {
	return [...]string{`GET rv=""`, `GET rv="0"`, `LIST rv=""`, `LIST rv="0"`}[k]
}

// Zero reports whether the read asks for resourceVersion "0".
func (k Kind) Zero() bool { return k == GetZero || k == ListZero }

// Path is the request URI of the read, relative to the server.
func (k Kind) Path() string {
	p := "/api/v1/namespaces/" + Namespace + "/configmaps"
	if k == GetConsistent || k == GetZero {
		p += "/" + Counter
	}
	if k.Zero() {
		p += "?resourceVersion=0"
	}
	return p
}

// Pace is how fast the writer and each reader go.
type Pace struct {
	Write       time.Duration // between one write's answer and the next write
	ChurnEvery  int           // every so many counter writes, one create and one delete
	Read        time.Duration // between one read's answer and the next read, per reader
	ReadTimeout time.Duration // a read that takes longer is an error
}

// WriteTimeout bounds one write.
const WriteTimeout = 5 * time.Second

// ChurnKeep is how many churn objects stay: each create past it deletes
// the oldest.
const ChurnKeep = 4

// Write is one completed counter write: Value was stored before Done.
type Write struct {
	Value int64
	Done  time.Time
}

// Read is one read as the server answered it.
type Read struct {
	Kind       Kind
	Start, End time.Time
	Status     int    // 0: no HTTP answer (Err says why)
	Value      int64  // the counter value of a 2xx answer; -1 when it held no counter
	Err        string // transport error, or the Status message of a non-2xx answer
}

// OK reports whether the read was answered with the counter's object.
func (r Read) OK() bool { return r.Status/100 == 2 && r.Err == "" }

// Setup creates the namespace and the counter at 0, and returns that
// write.
func Setup(ctx context.Context, cs kubernetes.Interface) (Write, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return Write{}, fmt.Errorf("creating namespace %s: %w", Namespace, err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: Counter}, Data: map[string]string{Key: "0"}}
	if _, err := cs.CoreV1().ConfigMaps(Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return Write{}, fmt.Errorf("creating the counter: %w", err)
	}
	return Write{Value: 0, Done: time.Now()}, nil
}

// Writer increments the counter through Client, and every
// Pace.ChurnEvery writes creates and deletes a churn object. Writes and
// Errs belong to Run's goroutine until it returns.
type Writer struct {
	Pace   Pace
	Client kubernetes.Interface
	Writes []Write
	// Errs are the failed writes, each with the time it was sent.
	Errs []WriteError
}

// WriteError is one failed write.
type WriteError struct {
	At  time.Time
	Err string
}

// Run writes until ctx ends.
func (wr *Writer) Run(ctx context.Context) {
	cms := wr.Client.CoreV1().ConfigMaps(Namespace)
	for v := int64(1); ctx.Err() == nil; v++ {
		wctx, cancel := context.WithTimeout(ctx, WriteTimeout)
		sent := time.Now()
		patch := fmt.Sprintf(`{"data":{%q:%q}}`, Key, strconv.FormatInt(v, 10))
		_, err := cms.Patch(wctx, Counter, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		// A write whose answer was lost may still be stored: leaving it
		// out keeps "newest completed write" a lower bound, as it must be.
		if err == nil {
			wr.Writes = append(wr.Writes, Write{Value: v, Done: time.Now()})
		} else {
			wr.fail(ctx, sent, "counter", err)
		}
		if wr.Pace.ChurnEvery > 0 && v%int64(wr.Pace.ChurnEvery) == 0 {
			wr.churn(wctx, v/int64(wr.Pace.ChurnEvery))
		}
		cancel()
		if Until(ctx, time.Now().Add(wr.Pace.Write)) != nil {
			return
		}
	}
}

// churn creates churn-n and deletes churn-(n-ChurnKeep).
func (wr *Writer) churn(ctx context.Context, n int64) {
	cms := wr.Client.CoreV1().ConfigMaps(Namespace)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("churn-%d", n)}, Data: map[string]string{"n": strconv.FormatInt(n, 10)}}
	sent := time.Now()
	if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		wr.fail(ctx, sent, "churn create", err)
	}
	if n <= ChurnKeep {
		return
	}
	sent = time.Now()
	if err := cms.Delete(ctx, fmt.Sprintf("churn-%d", n-ChurnKeep), metav1.DeleteOptions{}); err != nil {
		wr.fail(ctx, sent, "churn delete", err)
	}
}

// fail records a writer error unless the run was ending.
func (wr *Writer) fail(ctx context.Context, at time.Time, what string, err error) {
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return
	}
	wr.Errs = append(wr.Errs, WriteError{At: at, Err: fmt.Sprintf("%s: %v", what, err)})
}

// Reader sends one kind of read to Base, one at a time. Reads belong to
// Run's goroutine until it returns.
type Reader struct {
	Pace   Pace
	Kind   Kind
	Client *http.Client
	Base   string
	Reads  []Read
}

// Run reads until ctx ends.
func (rd *Reader) Run(ctx context.Context) {
	for ctx.Err() == nil {
		rctx, cancel := context.WithTimeout(ctx, rd.Pace.ReadTimeout)
		r := ReadOnce(rctx, rd.Client, rd.Base, rd.Kind)
		cancel()
		if ctx.Err() != nil && r.Status == 0 {
			return // cut short by the end of the run: not the server's answer
		}
		rd.Reads = append(rd.Reads, r)
		if Until(ctx, time.Now().Add(rd.Pace.Read)) != nil {
			return
		}
	}
}

// ReadOnce sends one read without any client-side retry and records the
// status exactly as the server sent it.
func ReadOnce(ctx context.Context, hc *http.Client, base string, kind Kind) (r Read) {
	r = Read{Kind: kind, Start: time.Now(), Value: -1}
	defer func() { r.End = time.Now() }()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+kind.Path(), nil)
	if err != nil {
		r.Err = err.Error()
		return r
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		r.Err = err.Error()
		return r
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	r.Status = resp.StatusCode
	if err != nil {
		r.Err = fmt.Sprintf("reading the body: %v", err)
		r.Status = 0
		return r
	}
	if r.Status/100 != 2 {
		r.Err = statusMessage(body)
		return r
	}
	if r.Value, err = counterValue(kind, body); err != nil {
		r.Err = err.Error()
	}
	return r
}

// WaitCounter waits, up to a minute, until base answers a consistent GET
// of the counter: its cache holds the namespace's first objects, so the
// readers measure what follows, not the start.
func WaitCounter(ctx context.Context, hc *http.Client, base string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		rd := ReadOnce(ctx, hc, base, GetConsistent)
		if rd.Status == http.StatusOK && rd.Value >= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s never served the counter (last: %d %s): %w", base, rd.Status, rd.Err, ctx.Err())
		case <-tick.C:
		}
	}
}

// statusMessage is the message of a metav1.Status body, or the start of
// the body when it is not one.
func statusMessage(body []byte) string {
	var st metav1.Status
	if json.Unmarshal(body, &st) == nil && st.Message != "" {
		return st.Message
	}
	return string(body[:min(len(body), 200)])
}

// ErrNoCounter is returned when a 2xx answer held no counter.
var ErrNoCounter = errors.New("counterload: the answer holds no counter")

// counterValue reads the counter's value out of a GET or LIST answer.
func counterValue(kind Kind, body []byte) (int64, error) {
	var data map[string]string
	if kind == GetConsistent || kind == GetZero {
		var cm corev1.ConfigMap
		if err := json.Unmarshal(body, &cm); err != nil {
			return -1, fmt.Errorf("decoding the counter: %w", err)
		}
		data = cm.Data
	} else {
		var l corev1.ConfigMapList
		if err := json.Unmarshal(body, &l); err != nil {
			return -1, fmt.Errorf("decoding the list: %w", err)
		}
		for i := range l.Items {
			if l.Items[i].Name == Counter {
				data = l.Items[i].Data
			}
		}
	}
	s, ok := data[Key]
	if !ok {
		return -1, ErrNoCounter
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return -1, fmt.Errorf("counter value %q: %w", s, err)
	}
	return v, nil
}

// NewestBefore is the value of the newest write that completed before t,
// or -1. writes are in completion order.
func NewestBefore(writes []Write, t time.Time) int64 {
	i := sort.Search(len(writes), func(i int) bool { return !writes[i].Done.Before(t) })
	if i == 0 {
		return -1
	}
	return writes[i-1].Value
}

// Until returns at t, or with ctx's error if ctx ends first.
func Until(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("schedule: %w", ctx.Err())
	}
}
