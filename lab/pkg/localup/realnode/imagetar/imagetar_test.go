package imagetar

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"reflect"
	"testing"
	"time"
)

// archive is a docker-save tarball read back.
type archive struct {
	files    map[string][]byte
	manifest []ManifestEntry
	config   Config
	layers   map[string][]layerEntry // by layer path
}

type layerEntry struct {
	name     string
	typ      byte
	mode     int64
	linkname string
	data     string
	modTime  time.Time
	uid, gid int
}

func readTar(t *testing.T, data []byte) (names []string, files map[string][]byte, hdrs []*tar.Header) {
	t.Helper()
	files = map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names, files, hdrs
		}
		if err != nil {
			t.Fatalf("reading tar: %v", err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		files[h.Name] = b
		hdrs = append(hdrs, h)
	}
}

func readArchive(t *testing.T, data []byte) archive {
	t.Helper()
	_, files, _ := readTar(t, data)
	a := archive{files: files, layers: map[string][]layerEntry{}}
	if err := json.Unmarshal(files["manifest.json"], &a.manifest); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	if len(a.manifest) != 1 {
		t.Fatalf("manifest has %d entries, want 1", len(a.manifest))
	}
	cfg, ok := files[a.manifest[0].Config]
	if !ok {
		t.Fatalf("config %s missing from the archive", a.manifest[0].Config)
	}
	if err := json.Unmarshal(cfg, &a.config); err != nil {
		t.Fatalf("config: %v", err)
	}
	for _, l := range a.manifest[0].Layers {
		layer, ok := files[l]
		if !ok {
			t.Fatalf("layer %s missing from the archive", l)
		}
		_, contents, hdrs := readTar(t, layer)
		for _, h := range hdrs {
			a.layers[l] = append(a.layers[l], layerEntry{
				name: h.Name, typ: h.Typeflag, mode: h.Mode, linkname: h.Linkname,
				data: string(contents[h.Name]), modTime: h.ModTime.UTC(), uid: h.Uid, gid: h.Gid,
			})
		}
	}
	return a
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestWrite(t *testing.T) {
	epoch := time.Unix(0, 0).UTC()
	tests := []struct {
		name       string
		img        Image
		wantLayer  []layerEntry
		wantConfig ContainerConfig
	}{
		{
			name: "pause: one static binary",
			img: Image{
				Ref: "registry.k8s.io/pause:3.10.2", Entrypoint: []string{"/pause"}, User: "65535:65535",
				Files: []File{{Path: "/pause", Mode: 0o755, Data: []byte("\x7fELF")}},
			},
			wantLayer:  []layerEntry{{name: "pause", typ: tar.TypeReg, mode: 0o755, data: "\x7fELF", modTime: epoch}},
			wantConfig: ContainerConfig{User: "65535:65535", Entrypoint: []string{"/pause"}},
		},
		{
			name: "agnhost: two names of one image",
			img: Image{
				Ref: "registry.k8s.io/e2e-test-images/agnhost:2.66.1", AlsoRefs: []string{"registry.k8s.io/e2e-test-images/agnhost:2.55"},
				Entrypoint: []string{"/agnhost"}, Files: []File{{Path: "agnhost", Mode: 0o755, Data: []byte("a")}},
			},
			wantLayer:  []layerEntry{{name: "agnhost", typ: tar.TypeReg, mode: 0o755, data: "a", modTime: epoch}},
			wantConfig: ContainerConfig{Entrypoint: []string{"/agnhost"}},
		},
		{
			name: "busybox: parents added, symlinks, sticky tmp, sorted",
			img: Image{
				Ref: "registry.k8s.io/e2e-test-images/busybox:1.37.0-2", Cmd: []string{"sh"},
				Env: []string{"PATH=/bin:/usr/bin"},
				Files: []File{
					{Path: "usr/bin/env", Mode: fs.ModeSymlink | 0o777, Link: "/bin/busybox"},
					{Path: "bin/busybox", Mode: 0o755, Data: []byte("bb")},
					{Path: "tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
					{Path: "bin/sh", Mode: fs.ModeSymlink, Link: "busybox"},
					{Path: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/bin/sh\n")},
				},
			},
			wantLayer: []layerEntry{
				{name: "bin/", typ: tar.TypeDir, mode: 0o755, modTime: epoch},
				{name: "bin/busybox", typ: tar.TypeReg, mode: 0o755, data: "bb", modTime: epoch},
				{name: "bin/sh", typ: tar.TypeSymlink, mode: 0o777, linkname: "busybox", modTime: epoch},
				{name: "etc/", typ: tar.TypeDir, mode: 0o755, modTime: epoch},
				{name: "etc/passwd", typ: tar.TypeReg, mode: 0o644, data: "root:x:0:0:root:/root:/bin/sh\n", modTime: epoch},
				{name: "tmp/", typ: tar.TypeDir, mode: 0o1777, modTime: epoch},
				{name: "usr/", typ: tar.TypeDir, mode: 0o755, modTime: epoch},
				{name: "usr/bin/", typ: tar.TypeDir, mode: 0o755, modTime: epoch},
				{name: "usr/bin/env", typ: tar.TypeSymlink, mode: 0o777, linkname: "/bin/busybox", modTime: epoch},
			},
			wantConfig: ContainerConfig{Env: []string{"PATH=/bin:/usr/bin"}, Cmd: []string{"sh"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			w, err := Write(&buf, tt.img)
			if err != nil {
				t.Fatal(err)
			}
			a := readArchive(t, buf.Bytes())
			m := a.manifest[0]
			if want := append([]string{tt.img.Ref}, tt.img.AlsoRefs...); !reflect.DeepEqual(m.RepoTags, want) {
				t.Errorf("RepoTags = %v, want %v", m.RepoTags, want)
			}
			// The config's file name and the image ID are its digest; the
			// layer's diff ID is the digest of the uncompressed layer.
			cfgBytes := a.files[m.Config]
			if got := "sha256:" + sha(cfgBytes); got != w.ID || m.Config != sha(cfgBytes)+".json" {
				t.Errorf("config %s, digest %s, ID %s: want all three to agree", m.Config, got, w.ID)
			}
			if len(m.Layers) != 1 {
				t.Fatalf("layers = %v, want one", m.Layers)
			}
			if got := "sha256:" + sha(a.files[m.Layers[0]]); got != w.DiffID || !reflect.DeepEqual(a.config.RootFS.DiffIDs, []string{got}) {
				t.Errorf("layer digest %s, diff IDs %v, Written.DiffID %s: want all to agree", got, a.config.RootFS.DiffIDs, w.DiffID)
			}
			if a.config.Architecture != "amd64" || a.config.OS != "linux" || a.config.RootFS.Type != "layers" {
				t.Errorf("config platform/rootfs = %s/%s %s", a.config.OS, a.config.Architecture, a.config.RootFS.Type)
			}
			if !reflect.DeepEqual(a.config.Config, tt.wantConfig) {
				t.Errorf("container config = %+v, want %+v", a.config.Config, tt.wantConfig)
			}
			if got := a.layers[m.Layers[0]]; !reflect.DeepEqual(got, tt.wantLayer) {
				t.Errorf("layer entries:\n got %+v\nwant %+v", got, tt.wantLayer)
			}
			var repos map[string]map[string]string
			if err := json.Unmarshal(a.files["repositories"], &repos); err != nil {
				t.Fatalf("repositories = %s (%v)", a.files["repositories"], err)
			}
			tags := 0
			for _, ts := range repos {
				for _, layer := range ts {
					tags++
					if "sha256:"+layer != w.DiffID {
						t.Errorf("repositories names layer %s, want %s", layer, w.DiffID)
					}
				}
			}
			if tags != 1+len(tt.img.AlsoRefs) {
				t.Errorf("repositories = %s: want one tag per name", a.files["repositories"])
			}
		})
	}
}

func TestWriteIsDeterministic(t *testing.T) {
	img := Image{Ref: "example.com/x:1", Files: []File{{Path: "b", Mode: 0o644, Data: []byte("b")}, {Path: "a/c", Mode: 0o600, Data: []byte("c")}}}
	var one, two bytes.Buffer
	w1, err := Write(&one, img)
	if err != nil {
		t.Fatal(err)
	}
	img.Files[0], img.Files[1] = img.Files[1], img.Files[0]
	w2, err := Write(&two, img)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(one.Bytes(), two.Bytes()) || w1 != w2 {
		t.Errorf("the same files in another order gave another archive (%s vs %s)", w1.ID, w2.ID)
	}
}

func TestWriteRefusesInvalidImages(t *testing.T) {
	tests := []struct {
		name string
		img  Image
	}{
		{"no tag", Image{Ref: "registry.k8s.io/pause"}},
		{"port but no tag", Image{Ref: "localhost:5000/pause"}},
		{"empty tag", Image{Ref: "pause:"}},
		{"second name without tag", Image{Ref: "x:1", AlsoRefs: []string{"x"}}},
		{"path leaves the root", Image{Ref: "x:1", Files: []File{{Path: "../etc/passwd", Mode: 0o644}}}},
		{"root itself", Image{Ref: "x:1", Files: []File{{Path: "/", Mode: fs.ModeDir | 0o755}}}},
		{"listed twice", Image{Ref: "x:1", Files: []File{{Path: "a", Mode: 0o644}, {Path: "/a", Mode: 0o644}}}},
		{"file as parent", Image{Ref: "x:1", Files: []File{{Path: "a", Mode: 0o644}, {Path: "a/b", Mode: 0o644}}}},
		{"symlink without target", Image{Ref: "x:1", Files: []File{{Path: "a", Mode: fs.ModeSymlink}}}},
		{"device", Image{Ref: "x:1", Files: []File{{Path: "dev/null", Mode: fs.ModeDevice | 0o666}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Write(io.Discard, tt.img); !errors.Is(err, ErrInvalid) {
				t.Errorf("Write = %v, want ErrInvalid", err)
			}
		})
	}
}
