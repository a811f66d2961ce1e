package imagetar

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
	"time"
)

// ErrInvalid is wrapped by Write when the Image cannot be written.
var ErrInvalid = errors.New("imagetar: invalid image")

// File is one entry of the image's single layer.
type File struct {
	// Path is relative to the root, with slashes ("bin/sh").
	Path string
	// Mode holds the permission bits; fs.ModeDir makes a directory and
	// fs.ModeSymlink a symbolic link to Link.
	Mode fs.FileMode
	// Data is a regular file's content.
	Data []byte
	// Link is a symbolic link's target.
	Link string
}

// Image is what Write packs.
type Image struct {
	// Ref names the image, e.g. "registry.k8s.io/pause:3.10.2". It must
	// carry a tag: containerd names the imported image after it.
	Ref string
	// AlsoRefs are more names of the same image, each with a tag.
	AlsoRefs []string
	// Architecture and OS default to amd64 and linux.
	Architecture, OS string
	Entrypoint, Cmd  []string
	Env              []string
	WorkingDir       string
	// User is the config's User ("65535:65535"); empty means root.
	User string
	// Created stamps the config and every file; the zero value means the
	// Unix epoch, so the output does not depend on the clock.
	Created time.Time
	Files   []File
}

// Config is the part of the image config (the OCI image spec's
// application/vnd.oci.image.config.v1+json, which Docker's is a superset
// of) that Write fills in.
type Config struct {
	Architecture string          `json:"architecture"`
	OS           string          `json:"os"`
	Created      time.Time       `json:"created"`
	Config       ContainerConfig `json:"config"`
	RootFS       RootFS          `json:"rootfs"`
	History      []History       `json:"history"`
}

// ContainerConfig is how a container of the image runs by default.
type ContainerConfig struct {
	User       string   `json:"User,omitempty"`
	Env        []string `json:"Env,omitempty"`
	Entrypoint []string `json:"Entrypoint,omitempty"`
	Cmd        []string `json:"Cmd,omitempty"`
	WorkingDir string   `json:"WorkingDir,omitempty"`
}

// RootFS lists the layers' diff IDs, bottom first.
type RootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

// History is one step of how the image was made.
type History struct {
	Created   time.Time `json:"created"`
	CreatedBy string    `json:"created_by"`
}

// ManifestEntry is one element of the archive's manifest.json.
type ManifestEntry struct {
	Config   string   `json:"Config"`
	RepoTags []string `json:"RepoTags"`
	Layers   []string `json:"Layers"`
}

// Written describes what Write produced.
type Written struct {
	// ID is the image ID: "sha256:" and the config's digest.
	ID string
	// DiffID is the layer's digest, "sha256:...".
	DiffID string
}

// Write writes img as a docker-save tarball to w.
func Write(w io.Writer, img Image) (Written, error) {
	refs := append([]string{img.Ref}, img.AlsoRefs...)
	repos := map[string]map[string]string{}
	for _, ref := range refs {
		repo, tag, err := splitRef(ref)
		if err != nil {
			return Written{}, err
		}
		if repos[repo] == nil {
			repos[repo] = map[string]string{}
		}
		repos[repo][tag] = ""
	}
	created := img.Created
	if created.IsZero() {
		created = time.Unix(0, 0)
	}
	created = created.UTC()
	layer, err := Layer(img.Files, created)
	if err != nil {
		return Written{}, err
	}
	layerSum := sha256.Sum256(layer)
	diffID := "sha256:" + hex.EncodeToString(layerSum[:])
	cfg := Config{
		Architecture: orDefault(img.Architecture, "amd64"),
		OS:           orDefault(img.OS, "linux"),
		Created:      created,
		Config: ContainerConfig{
			User: img.User, Env: img.Env, Entrypoint: img.Entrypoint, Cmd: img.Cmd, WorkingDir: img.WorkingDir,
		},
		RootFS:  RootFS{Type: "layers", DiffIDs: []string{diffID}},
		History: []History{{Created: created, CreatedBy: "freshcache local-up (lab/pkg/localup/realnode/imagetar)"}},
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return Written{}, err
	}
	cfgSum := sha256.Sum256(cfgJSON)
	cfgHex := hex.EncodeToString(cfgSum[:])
	layerPath := hex.EncodeToString(layerSum[:]) + "/layer.tar"
	manifest, err := json.Marshal([]ManifestEntry{{Config: cfgHex + ".json", RepoTags: refs, Layers: []string{layerPath}}})
	if err != nil {
		return Written{}, err
	}
	// The legacy "repositories" file: older importers name images by it.
	for _, tags := range repos {
		for tag := range tags {
			tags[tag] = hex.EncodeToString(layerSum[:])
		}
	}
	repositories, err := json.Marshal(repos)
	if err != nil {
		return Written{}, err
	}

	tw := tar.NewWriter(w)
	entries := []struct {
		name string
		data []byte
	}{
		{cfgHex + ".json", cfgJSON},
		{layerPath, layer},
		{"manifest.json", manifest},
		{"repositories", repositories},
	}
	if err := writeDir(tw, hex.EncodeToString(layerSum[:])+"/", 0o755, created); err != nil {
		return Written{}, err
	}
	for _, e := range entries {
		if err := writeFile(tw, e.name, 0o644, e.data, created); err != nil {
			return Written{}, err
		}
	}
	if err := tw.Close(); err != nil {
		return Written{}, err
	}
	return Written{ID: "sha256:" + cfgHex, DiffID: diffID}, nil
}

// Layer returns the uncompressed layer tarball of files: sorted by path,
// with every missing parent directory added (mode 0755), owned by root and
// stamped with created.
func Layer(files []File, created time.Time) ([]byte, error) {
	byPath := map[string]File{}
	for _, f := range files {
		p, err := cleanPath(f.Path)
		if err != nil {
			return nil, err
		}
		if _, dup := byPath[p]; dup {
			return nil, fmt.Errorf("%w: %s is listed twice", ErrInvalid, p)
		}
		f.Path = p
		byPath[p] = f
	}
	for p := range byPath {
		for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
			if f, ok := byPath[dir]; ok {
				if !f.Mode.IsDir() {
					return nil, fmt.Errorf("%w: %s is a parent of %s but not a directory", ErrInvalid, dir, p)
				}
				continue
			}
			byPath[dir] = File{Path: dir, Mode: fs.ModeDir | 0o755}
		}
	}
	paths := make([]string, 0, len(byPath))
	for p := range byPath {
		paths = append(paths, p)
	}
	sort.Strings(paths)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		f := byPath[p]
		var err error
		switch {
		case f.Mode.IsDir():
			err = writeDir(tw, p+"/", f.Mode, created)
		case f.Mode&fs.ModeSymlink != 0:
			if f.Link == "" {
				return nil, fmt.Errorf("%w: symlink %s has no target", ErrInvalid, p)
			}
			err = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: p, Linkname: f.Link, Mode: 0o777, ModTime: created, Format: tar.FormatPAX})
		case f.Mode.IsRegular():
			err = writeFile(tw, p, f.Mode.Perm(), f.Data, created)
		default:
			return nil, fmt.Errorf("%w: %s has unsupported mode %s", ErrInvalid, p, f.Mode)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeDir writes a directory entry; fs.ModeSticky becomes the tar sticky
// bit (a /tmp needs it).
func writeDir(tw *tar.Writer, name string, mode fs.FileMode, created time.Time) error {
	m := int64(mode.Perm())
	if mode&fs.ModeSticky != 0 {
		m |= 0o1000
	}
	return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: m, ModTime: created, Format: tar.FormatPAX})
}

func writeFile(tw *tar.Writer, name string, mode fs.FileMode, data []byte, created time.Time) error {
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: int64(mode), Size: int64(len(data)), ModTime: created, Format: tar.FormatPAX}); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

// cleanPath turns "/bin/sh" or "bin//sh" into "bin/sh" and refuses paths
// that leave the root.
func cleanPath(p string) (string, error) {
	c := path.Clean("/" + p)
	if c == "/" || slices.Contains(strings.Split(p, "/"), "..") {
		return "", fmt.Errorf("%w: path %q", ErrInvalid, p)
	}
	return strings.TrimPrefix(c, "/"), nil
}

// splitRef splits "host/name:tag" into "host/name" and "tag".
func splitRef(ref string) (repo, tag string, err error) {
	i := strings.LastIndexByte(ref, ':')
	if i < 0 || strings.Contains(ref[i:], "/") || i == len(ref)-1 || i == 0 {
		return "", "", fmt.Errorf("%w: reference %q has no tag", ErrInvalid, ref)
	}
	return ref[:i], ref[i+1:], nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
