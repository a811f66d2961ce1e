package servermetrics

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"

	"k8s.io/client-go/rest"

	"github.com/freshcache/freshcache/tools/bench/promtext"
)

// MetricsTimeout bounds one scrape of a server's /metrics.
const MetricsTimeout = 30 * time.Second

// Client is an HTTP client with the admin credentials of one
// kube-apiserver, for paths outside the API: /metrics, and
// /debug/pprof for the apiserver benchmark's profiles.
type Client struct {
	hc   *http.Client
	host string
}

// NewClient builds a Client from the server's REST configuration.
func NewClient(rc *rest.Config) (*Client, error) {
	rt, err := rest.TransportFor(rc)
	if err != nil {
		return nil, err
	}
	return &Client{hc: &http.Client{Transport: rt}, host: strings.TrimSuffix(rc.Host, "/")}, nil
}

// Get fetches path, bounded by timeout, and fails on any status but 200.
func (s *Client) Get(ctx context.Context, path, accept string, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.host+path, nil)
	if err != nil {
		return nil, err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("servermetrics: GET %s: %s: %.200s", path, resp.Status, b)
	}
	return b, nil
}

// Metrics scrapes the server's /metrics, as text, within MetricsTimeout.
func (s *Client) Metrics(ctx context.Context) ([]*dto.MetricFamily, error) {
	b, err := s.Get(ctx, "/metrics", "text/plain", MetricsTimeout)
	if err != nil {
		return nil, err
	}
	return parse(bytes.NewReader(b), s.host+"/metrics")
}

// Scrape reads the Prometheus text at url (an etcd server's /metrics,
// which needs no credentials).
func Scrape(ctx context.Context, hc *http.Client, url string) ([]*dto.MetricFamily, error) {
	body, err := promtext.Get(ctx, hc, url)
	if err != nil {
		return nil, fmt.Errorf("servermetrics: GET %s: %w", url, err)
	}
	defer func() { _ = body.Close() }()
	return parse(body, url)
}

func parse(r io.Reader, url string) ([]*dto.MetricFamily, error) {
	m, err := promtext.Parse(r)
	if err != nil {
		return nil, fmt.Errorf("servermetrics: parsing %s: %w", url, err)
	}
	out := make([]*dto.MetricFamily, 0, len(m))
	for _, mf := range m {
		out = append(out, mf)
	}
	return out, nil
}
