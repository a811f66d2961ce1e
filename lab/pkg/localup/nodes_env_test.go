package localup

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestWithoutIPTables: a hollow kubelet's PATH keeps every directory but
// those holding an iptables program, and nothing else in its environment
// changes.
func TestWithoutIPTables(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		has     map[string]bool // executable paths
		want    []string
	}{
		{
			name:    "Debian: iptables in /usr/sbin",
			environ: []string{"HOME=/root", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C"},
			has:     map[string]bool{"/usr/sbin/iptables": true, "/usr/sbin/ip6tables": true, "/sbin/iptables": true},
			want:    []string{"HOME=/root", "PATH=/usr/local/sbin:/usr/local/bin:/usr/bin:/bin", "LANG=C"},
		},
		{
			name:    "only the save tool still counts",
			environ: []string{"PATH=/opt/x:/usr/bin"},
			has:     map[string]bool{"/opt/x/ip6tables-save": true},
			want:    []string{"PATH=/usr/bin"},
		},
		{
			name:    "no iptables installed",
			environ: []string{"PATH=/usr/sbin:/usr/bin"},
			want:    []string{"PATH=/usr/sbin:/usr/bin"},
		},
		{
			name:    "nothing left",
			environ: []string{"PATH=/usr/sbin"},
			has:     map[string]bool{"/usr/sbin/iptables": true},
			want:    []string{"PATH="},
		},
		{
			name:    "no PATH",
			environ: []string{"HOME=/root"},
			want:    []string{"HOME=/root"},
		},
		{
			name:    "a look-alike is not iptables",
			environ: []string{"PATH=/usr/sbin"},
			has:     map[string]bool{"/usr/sbin/iptables-nft": true, "/usr/sbin/xtables-nft-multi": true},
			want:    []string{"PATH=/usr/sbin"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := withoutIPTables(tt.environ, func(p string) bool { return tt.has[p] })
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("withoutIPTables(%q) = %q, want %q", tt.environ, got, tt.want)
			}
		})
	}
}

func TestIsExecutable(t *testing.T) {
	dir := t.TempDir()
	for name, mode := range map[string]os.FileMode{"exe": 0o755, "data": 0o644} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("exe", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"exe": true, "link": true, "data": false, "missing": false, ".": false} {
		if got := isExecutable(filepath.Join(dir, name)); got != want {
			t.Errorf("isExecutable(%s) = %v, want %v", name, got, want)
		}
	}
}
