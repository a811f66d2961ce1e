package robustness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// writeTimeout bounds one write through W; W's member keeps its quorum,
// so a write that takes longer is recorded as a writer error.
const writeTimeout = 5 * time.Second

// churnKeep is how many churn objects stay: each create past it deletes
// the oldest, so the LISTs carry a changing set besides the counter.
const churnKeep = 4

// healWriter writes through W: the counter, increasing by one per write,
// and every ChurnEvery writes a create and a delete. writes and errs are
// owned by the writer's goroutine until run returns.
type healWriter struct {
	cfg    healConfig
	client kubernetes.Interface
	writes []healWrite
	errs   []string
}

func (wr *healWriter) run(ctx context.Context) {
	cms := wr.client.CoreV1().ConfigMaps(healNamespace)
	for v := int64(1); ctx.Err() == nil; v++ {
		wctx, cancel := context.WithTimeout(ctx, writeTimeout)
		patch := fmt.Sprintf(`{"data":{%q:%q}}`, healKey, strconv.FormatInt(v, 10))
		_, err := cms.Patch(wctx, healCounter, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		// A write whose answer was lost may still be stored: leaving it
		// out keeps "newest completed write" a lower bound, as it must be.
		if err == nil {
			wr.writes = append(wr.writes, healWrite{Value: v, Done: time.Now()})
		} else {
			wr.fail(ctx, "counter", err)
		}
		if wr.cfg.ChurnEvery > 0 && v%int64(wr.cfg.ChurnEvery) == 0 {
			wr.churn(wctx, v/int64(wr.cfg.ChurnEvery))
		}
		cancel()
		if until(ctx, time.Now().Add(wr.cfg.WritePace)) != nil {
			return
		}
	}
}

// churn creates churn-n and deletes churn-(n-churnKeep).
func (wr *healWriter) churn(ctx context.Context, n int64) {
	cms := wr.client.CoreV1().ConfigMaps(healNamespace)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("churn-%d", n)}, Data: map[string]string{"n": strconv.FormatInt(n, 10)}}
	if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		wr.fail(ctx, "churn create", err)
	}
	if n <= churnKeep {
		return
	}
	if err := cms.Delete(ctx, fmt.Sprintf("churn-%d", n-churnKeep), metav1.DeleteOptions{}); err != nil {
		wr.fail(ctx, "churn delete", err)
	}
}

// fail records a writer error unless the run was ending.
func (wr *healWriter) fail(ctx context.Context, what string, err error) {
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return
	}
	wr.errs = append(wr.errs, fmt.Sprintf("%s: %v", what, err))
}

// healReader sends one kind of read through R, one at a time. reads is
// owned by the reader's goroutine until run returns.
type healReader struct {
	cfg    healConfig
	kind   readKind
	client *http.Client
	base   string
	reads  []healRead
}

func (rd *healReader) run(ctx context.Context) {
	for ctx.Err() == nil {
		rctx, cancel := context.WithTimeout(ctx, rd.cfg.ReadTimeout)
		r := readOnce(rctx, rd.client, rd.base, rd.kind)
		cancel()
		if ctx.Err() != nil && r.Status == 0 {
			return // cut short by the end of the run: not the server's answer
		}
		rd.reads = append(rd.reads, r)
		if until(ctx, time.Now().Add(rd.cfg.ReadPace)) != nil {
			return
		}
	}
}

// readOnce sends one read without any client-side retry and records the
// status exactly as the server sent it.
func readOnce(ctx context.Context, hc *http.Client, base string, kind readKind) (r healRead) {
	r = healRead{Kind: kind, Start: time.Now(), Value: -1}
	defer func() { r.End = time.Now() }()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+kind.path(), nil)
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

// statusMessage is the message of a metav1.Status body, or the start of
// the body when it is not one.
func statusMessage(body []byte) string {
	var st metav1.Status
	if json.Unmarshal(body, &st) == nil && st.Message != "" {
		return st.Message
	}
	return string(body[:min(len(body), 200)])
}

var errNoCounter = errors.New("fault-heal: the answer holds no counter")

// counterValue reads the counter's value out of a GET or LIST answer.
func counterValue(kind readKind, body []byte) (int64, error) {
	var data map[string]string
	if kind == getConsistent || kind == getZero {
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
			if l.Items[i].Name == healCounter {
				data = l.Items[i].Data
			}
		}
	}
	s, ok := data[healKey]
	if !ok {
		return -1, errNoCounter
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return -1, fmt.Errorf("counter value %q: %w", s, err)
	}
	return v, nil
}
