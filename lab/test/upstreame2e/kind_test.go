package upstreame2e

import (
	"reflect"
	"testing"
)

func TestKindUpArgs(t *testing.T) {
	base := []string{"--apiserver-arg=etcd-compaction-interval=1m"}
	for _, tc := range []struct {
		name    string
		args    []string
		want    []string
		wantErr bool
	}{
		{name: "no flags: only the shared ones", args: nil, want: append(append([]string(nil), base...), "--feature-gates=")},
		{name: "upstream's cacher, no gates (kind-up's default gates do not apply)",
			args: []string{"--watch-cache-implementation=upstream"},
			want: append(append([]string(nil), base...), "--apiserver-arg=watch-cache-implementation=upstream", "--feature-gates=")},
		{name: "gates become kind-up's flag, joined",
			args: []string{"--watch-cache-implementation=freshcache", "--feature-gates=FreshResourceVersionZero=true", "--feature-gates=A=false"},
			want: append(append([]string(nil), base...), "--apiserver-arg=watch-cache-implementation=freshcache", "--feature-gates=FreshResourceVersionZero=true,A=false")},
		{name: "a value with = in it", args: []string{"--runtime-config=api/all=true"},
			want: append(append([]string(nil), base...), "--apiserver-arg=runtime-config=api/all=true", "--feature-gates=")},
		{name: "a boolean flag without a value", args: []string{"--profiling"}, wantErr: true},
		{name: "not a flag", args: []string{"upstream"}, wantErr: true},
		{name: "no name", args: []string{"--=x"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := kindUpArgs(Implementation{Name: "x", Args: tc.args})
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
	// Every implementation the suite knows turns into kind-up's flags.
	for _, impl := range Implementations {
		if _, err := kindUpArgs(impl); err != nil {
			t.Errorf("%s: %v", impl.Name, err)
		}
	}
}
