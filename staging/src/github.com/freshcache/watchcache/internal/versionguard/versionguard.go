package versionguard

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ErrMalformedVersion is wrapped when a version string cannot be parsed.
var ErrMalformedVersion = errors.New("versionguard: malformed etcd version")

// Version is an etcd server version, major.minor.patch.
type Version struct{ Major, Minor, Patch int }

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

func (v Version) less(o Version) bool {
	if v.Major != o.Major {
		return v.Major < o.Major
	}
	if v.Minor != o.Minor {
		return v.Minor < o.Minor
	}
	return v.Patch < o.Patch
}

// Parse reads "3.5.13", "v3.5.13" or "3.6.0-rc.1" (pre-release and build
// suffixes are ignored: a 3.5.13 pre-release is judged as 3.5.13).
func Parse(s string) (Version, error) {
	raw := strings.TrimPrefix(strings.TrimSpace(s), "v")
	if i := strings.IndexAny(raw, "-+"); i >= 0 {
		raw = raw[:i]
	}
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return Version{}, fmt.Errorf("%w: %q", ErrMalformedVersion, s)
	}
	var nums [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || p == "" || (len(p) > 1 && p[0] == '0') {
			return Version{}, fmt.Errorf("%w: %q", ErrMalformedVersion, s)
		}
		nums[i] = n
	}
	return Version{nums[0], nums[1], nums[2]}, nil
}

// minimumPatch is the first patch of each affected minor line with both
// fixes. Minor lines not listed and older than 3.4 are too old; newer ones
// (3.6 and later) carry the fixes from their first release.
var minimumPatch = map[[2]int]int{
	{3, 4}: 31,
	{3, 5}: 13,
}

// Supports reports whether v has correct progress notifications.
func Supports(v Version) bool {
	if min, ok := minimumPatch[[2]int{v.Major, v.Minor}]; ok {
		return v.Patch >= min
	}
	return !v.less(Version{3, 6, 0})
}

// Endpoint is one member's answer.
type Endpoint struct {
	URL     string
	Version string
	// Err is set when the endpoint did not answer or its version did not
	// parse; such an endpoint counts as unsupported.
	Err error
	OK  bool
}

// Result is the verdict for a cluster.
type Result struct {
	Endpoints []Endpoint
	// OK is true when every endpoint answered with a supported version.
	OK bool
}

// Reason explains a negative verdict in one line, for the log.
func (r Result) Reason() string {
	var bad []string
	for _, e := range r.Endpoints {
		switch {
		case e.Err != nil:
			bad = append(bad, fmt.Sprintf("%s: %v", e.URL, e.Err))
		case !e.OK:
			bad = append(bad, fmt.Sprintf("%s runs etcd %s (needs >= 3.4.31, >= 3.5.13 or >= 3.6.0)", e.URL, e.Version))
		}
	}
	if len(bad) == 0 {
		return ""
	}
	return strings.Join(bad, "; ")
}

// StatusClient is the part of clientv3.Maintenance that Check uses.
type StatusClient interface {
	Status(ctx context.Context, endpoint string) (*clientv3.StatusResponse, error)
}

// Check asks every endpoint for its version. An endpoint that does not
// answer makes the verdict negative: a cache must not rely on a member it
// could not vet.
func Check(ctx context.Context, m StatusClient, endpoints []string) Result {
	res := Result{OK: len(endpoints) > 0}
	for _, ep := range endpoints {
		e := Endpoint{URL: ep}
		status, err := m.Status(ctx, ep)
		switch {
		case err != nil:
			e.Err = err
		default:
			e.Version = status.Version
			v, perr := Parse(status.Version)
			if perr != nil {
				e.Err = perr
			} else {
				e.OK = Supports(v)
			}
		}
		res.OK = res.OK && e.OK
		res.Endpoints = append(res.Endpoints, e)
	}
	return res
}
