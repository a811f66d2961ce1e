package realnode

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/freshcache/freshcache/lab/pkg/localup/realnode/imagetar"
)

func TestLddPaths(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      []string
	}{
		{"empty", "", nil},
		{"static", "\tnot a dynamic executable\n", nil},
		{
			name: "libraries and loader",
			out: "\tlinux-vdso.so.1 (0x00007ffd)\n" +
				"\tlibcurl.so.4 => /lib/x86_64-linux-gnu/libcurl.so.4 (0x00007f88)\n" +
				"\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f88)\n" +
				"\t/lib64/ld-linux-x86-64.so.2 (0x00007f88)\n",
			want: []string{"/lib/x86_64-linux-gnu/libcurl.so.4", "/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"},
		},
		{"not found has no path", "\tlibgone.so.1 => not found\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := lddPaths(tc.out); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("lddPaths = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestMergeFilesKeepsFirst(t *testing.T) {
	a := []imagetar.File{{Path: "lib/libc.so.6", Data: []byte("first")}, {Path: "usr/bin/curl"}}
	b := []imagetar.File{{Path: "lib/libc.so.6", Data: []byte("second")}, {Path: "usr/bin/dig"}}
	got := mergeFiles(a, b)
	var paths []string
	for _, f := range got {
		paths = append(paths, f.Path)
	}
	if want := []string{"lib/libc.so.6", "usr/bin/curl", "usr/bin/dig"}; !reflect.DeepEqual(paths, want) {
		t.Fatalf("paths = %q, want %q", paths, want)
	}
	if string(got[0].Data) != "first" {
		t.Fatalf("the first copy of a shared path must win, got %q", got[0].Data)
	}
}

// A host program comes with the loader and libc it needs, at the paths the
// loader looks for them, relative to the image's root.
func TestHostProgramCarriesItsLibraries(t *testing.T) {
	sh, files := hostLs(t, "")
	var libc, loader bool
	for _, f := range files {
		if strings.HasPrefix(f.Path, "/") || len(f.Data) == 0 {
			t.Fatalf("file %q: want a relative path with content", f.Path)
		}
		libc = libc || strings.Contains(f.Path, "libc.so")
		loader = loader || strings.Contains(f.Path, "ld-linux")
	}
	if files[0].Path != strings.TrimPrefix(sh, "/") || !libc || !loader {
		t.Fatalf("hostProgram(%s) = %d files, first %q, libc %v, loader %v", sh, len(files), files[0].Path, libc, loader)
	}
}

func TestHostProgramAtAnotherPath(t *testing.T) {
	_, files := hostLs(t, "/usr/bin/dir")
	if files[0].Path != "usr/bin/dir" || len(files[0].Data) == 0 {
		t.Fatalf("first file %q (%d bytes), want usr/bin/dir with ls's content", files[0].Path, len(files[0].Data))
	}
}

func TestHostProgramMissing(t *testing.T) {
	if _, err := hostProgram("/nonexistent/curl", ""); err == nil {
		t.Fatal("want an error for a program that is not there")
	}
}

// The TLS pair is made once and then read back, so the agnhost image is
// the same at every start.
func TestLocalhostPairIsKept(t *testing.T) {
	dir := t.TempDir()
	crt1, key1, err := localhostPair(dir)
	if err != nil {
		t.Fatal(err)
	}
	crt2, key2, err := localhostPair(dir)
	if err != nil {
		t.Fatal(err)
	}
	if string(crt1) != string(crt2) || string(key1) != string(key2) {
		t.Fatal("a second call made a new pair")
	}
	if _, err := tls.X509KeyPair(crt1, key1); err != nil {
		t.Fatalf("not a usable TLS pair: %v", err)
	}
	block, _ := pem.Decode(crt1)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if err := cert.VerifyHostname("localhost"); err != nil {
		t.Fatal(err)
	}
}

// hostLs is the path of this host's ls and hostProgram of it, placed at
// at ("": where the host has it); it skips t where there is no ls.
func hostLs(t *testing.T, at string) (string, []imagetar.File) {
	t.Helper()
	ls, err := exec.LookPath("ls")
	if err != nil {
		t.Skip("no ls here")
	}
	files, err := hostProgram(ls, at)
	if err != nil {
		t.Fatal(err)
	}
	return ls, files
}
