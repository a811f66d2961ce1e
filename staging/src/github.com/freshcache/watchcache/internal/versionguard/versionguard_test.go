package versionguard

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestSupports(t *testing.T) {
	cases := []struct {
		version string
		want    bool
	}{
		{"3.3.27", false},
		{"3.4.0", false},
		{"3.4.30", false},
		{"3.4.31", true},
		{"3.4.40", true},
		{"3.5.0", false},
		{"3.5.12", false},
		{"3.5.13", true},
		{"v3.5.21", true},
		{"3.6.0", true},
		{"3.6.0-rc.1", true},
		{"3.7.0", true},
		{"4.0.0", true},
		{"2.3.8", false},
	}
	for _, tc := range cases {
		t.Run(tc.version, func(t *testing.T) {
			v, err := Parse(tc.version)
			if err != nil {
				t.Fatal(err)
			}
			if got := Supports(v); got != tc.want {
				t.Fatalf("Supports(%s) = %v, want %v", tc.version, got, tc.want)
			}
		})
	}
}

func TestParseRejectsMalformed(t *testing.T) {
	for _, s := range []string{"", "3", "3.5", "3.5.x", "3..1", "a.b.c", "3.5.13.1", "-3.5.1", "03.5.1"} {
		if _, err := Parse(s); !errors.Is(err, ErrMalformedVersion) {
			t.Errorf("Parse(%q) = %v, want ErrMalformedVersion", s, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"3.5.13", "v3.4.31", "3.6.0-rc.1+build", "", "1.2", "99999999999999999999.1.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrMalformedVersion) {
				t.Fatalf("Parse(%q) failed with an unwrapped error %v", s, err)
			}
			return
		}
		// A parsed version prints back to something Parse accepts as equal.
		again, err := Parse(v.String())
		if err != nil || again != v {
			t.Fatalf("round trip of %q: %v -> %v (%v)", s, v, again, err)
		}
	})
}

type fakeStatus map[string]any // endpoint -> version string or error

func (f fakeStatus) Status(_ context.Context, ep string) (*clientv3.StatusResponse, error) {
	switch v := f[ep].(type) {
	case string:
		return (*clientv3.StatusResponse)(&etcdserverpb.StatusResponse{Version: v}), nil
	case error:
		return nil, v
	}
	return nil, errors.New("no such endpoint")
}

func TestCheck(t *testing.T) {
	down := errors.New("connection refused")
	cases := []struct {
		name      string
		status    fakeStatus
		endpoints []string
		ok        bool
		reason    string
	}{
		{"all new", fakeStatus{"a": "3.5.21", "b": "3.6.4"}, []string{"a", "b"}, true, ""},
		{"one old", fakeStatus{"a": "3.5.21", "b": "3.5.9"}, []string{"a", "b"}, false, "b runs etcd 3.5.9"},
		{"one unreachable", fakeStatus{"a": "3.5.21", "b": down}, []string{"a", "b"}, false, "connection refused"},
		{"garbage version", fakeStatus{"a": "banana"}, []string{"a"}, false, "malformed"},
		{"no endpoints", fakeStatus{}, nil, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := Check(context.Background(), tc.status, tc.endpoints)
			if res.OK != tc.ok {
				t.Fatalf("OK = %v, want %v (%+v)", res.OK, tc.ok, res)
			}
			if !strings.Contains(res.Reason(), tc.reason) {
				t.Fatalf("Reason %q lacks %q", res.Reason(), tc.reason)
			}
		})
	}
}
