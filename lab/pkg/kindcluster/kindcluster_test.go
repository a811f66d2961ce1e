package kindcluster

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestReadEnv(t *testing.T) {
	cases := []struct {
		name, text string
		missing    bool
		want       []string
		wantErr    bool
	}{
		{name: "no file", missing: true},
		{name: "empty: no shim", text: ""},
		{name: "the shim's", text: "KIND_REAL_DOCKER=/usr/bin/docker\nKIND_SHIM_UNPRIVILEGED=1\nPATH=/o/docker-shim:/usr/bin\n",
			want: []string{"KIND_REAL_DOCKER=/usr/bin/docker", "KIND_SHIM_UNPRIVILEGED=1", "PATH=/o/docker-shim:/usr/bin"}},
		{name: "a value holding =", text: "KIND_SHIM_IMAGE_TO=a=b\n\n", want: []string{"KIND_SHIM_IMAGE_TO=a=b"}},
		{name: "no =", text: "PATH\n", wantErr: true},
		{name: "no name", text: "=x\n", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "kind.env")
			if !tc.missing {
				if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := ReadEnv(path)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want an error: %v", err, tc.wantErr)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
