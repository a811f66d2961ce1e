package demo59848

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/freshcache/freshcache/lab/internal/scrape"
)

// kubelet reads a hollow kubelet's own endpoints. kubemark serves the
// kubelet port over plain HTTP with no authentication and turns the
// debugging handlers on, so /runningpods/ (the pods in the fake container
// runtime, not the ones the kubelet was told about), /pods (the pods its
// pod manager holds, from the apiserver) and /metrics answer anyone on
// loopback.
type kubelet struct {
	base   string
	client *http.Client
}

func newKubelet(port int) *kubelet {
	return &kubelet{base: "http://127.0.0.1:" + strconv.Itoa(port), client: &http.Client{Timeout: 5 * time.Second}}
}

func (k *kubelet) get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.base+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return body, nil
}

func (k *kubelet) podNames(ctx context.Context, path string) ([]string, error) {
	body, err := k.get(ctx, path)
	if err != nil {
		return nil, err
	}
	var list corev1.PodList
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	var out []string
	for _, p := range list.Items {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	return out, nil
}

// runtimePods are the pods in the fake runtime.
func (k *kubelet) runtimePods(ctx context.Context) ([]string, error) {
	return k.podNames(ctx, "/runningpods/")
}

// managedPods are the pods the kubelet admitted from its pod sources.
func (k *kubelet) managedPods(ctx context.Context) ([]string, error) {
	return k.podNames(ctx, "/pods")
}

// metrics sums every sample of the named metrics whose labels contain
// filter (empty: all), e.g. kubelet_started_containers_total with
// container_type="container".
func (k *kubelet) metrics(ctx context.Context, names map[string]string) (map[string]float64, error) {
	body, err := k.get(ctx, "/metrics")
	if err != nil {
		return nil, err
	}
	samples, err := scrape.Samples(body)
	out := map[string]float64{}
	for k, v := range samples {
		for name, filter := range names {
			rest, ok := strings.CutPrefix(k, name)
			if ok && (rest == "" || rest[0] == '{') && strings.Contains(rest, filter) {
				out[name] += v
			}
		}
	}
	return out, err
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
