package promtext

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

func TestGet(t *testing.T) {
	const page = "# TYPE up gauge\nup 1\n"
	for name, tc := range map[string]struct {
		status   int
		wantBody string
		wantErr  string
	}{
		"200 hands back the body": {http.StatusOK, page, ""},
		"503 is an error":         {http.StatusServiceUnavailable, "", "503 Service Unavailable"},
		"403 is an error":         {http.StatusForbidden, "", "403 Forbidden"},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if got := r.Header.Get("Accept"); got != "text/plain" {
					t.Errorf("Accept: %q, want text/plain", got)
				}
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, page)
			}))
			defer srv.Close()
			body, err := Get(context.Background(), srv.Client(), srv.URL+"/metrics")
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("Get = %v, want error %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = body.Close() }()
			b, err := io.ReadAll(body)
			if err != nil || string(b) != tc.wantBody {
				t.Errorf("body %q, %v; want %q", b, err, tc.wantBody)
			}
		})
	}
}

func TestGetTransportError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/metrics"
	srv.Close()
	if _, err := Get(context.Background(), http.DefaultClient, url); err == nil || !strings.Contains(err.Error(), url) {
		t.Errorf("Get of a closed server = %v, want the transport's error naming %s", err, url)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Get(ctx, http.DefaultClient, url); err == nil {
		t.Error("Get with a cancelled context did not fail")
	}
}

func TestParse(t *testing.T) {
	for name, tc := range map[string]struct {
		text     string
		wantErr  bool
		family   string
		wantType dto.MetricType
		series   int
	}{
		"typed counter": {"# TYPE reads_total counter\nreads_total{verb=\"list\"} 3\nreads_total{verb=\"get\"} 4\n",
			false, "reads_total", dto.MetricType_COUNTER, 2},
		"sample lines alone are untyped": {"reads_total{verb=\"list\"} 3\n", false, "reads_total", dto.MetricType_UNTYPED, 1},
		"histogram": {"# TYPE wait_seconds histogram\nwait_seconds_bucket{le=\"0.1\"} 1\nwait_seconds_bucket{le=\"+Inf\"} 2\nwait_seconds_sum 0.3\nwait_seconds_count 2\n",
			false, "wait_seconds", dto.MetricType_HISTOGRAM, 1},
		"broken": {"reads_total{verb=\"list\" 3\n", true, "", 0, 0},
	} {
		mfs, err := Parse(strings.NewReader(tc.text))
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: Parse error %v, want error %v", name, err, tc.wantErr)
			continue
		}
		if tc.wantErr {
			continue
		}
		mf := mfs[tc.family]
		if mf.GetType() != tc.wantType || len(mf.GetMetric()) != tc.series {
			t.Errorf("%s: family %s is %v with %d series, want %v with %d", name, tc.family, mf.GetType(), len(mf.GetMetric()), tc.wantType, tc.series)
		}
	}
}

func TestLabel(t *testing.T) {
	pair := func(n, v string) *dto.LabelPair { return &dto.LabelPair{Name: &n, Value: &v} }
	m := &dto.Metric{Label: []*dto.LabelPair{pair("resource", "pods"), pair("group", ""), pair("verb", "list")}}
	for name, tc := range map[string]struct {
		m     *dto.Metric
		label string
		want  string
	}{
		"first":           {m, "resource", "pods"},
		"last":            {m, "verb", "list"},
		"empty value":     {m, "group", ""},
		"absent":          {m, "scope", ""},
		"no labels":       {&dto.Metric{}, "verb", ""},
		"nil metric":      {nil, "verb", ""},
		"case matters":    {m, "Verb", ""},
		"value, not name": {m, "pods", ""},
	} {
		if got := Label(tc.m, tc.label); got != tc.want {
			t.Errorf("%s: Label(%q) = %q, want %q", name, tc.label, got, tc.want)
		}
	}
}
