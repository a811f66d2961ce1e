package realnode

// The images a real node runs, built from files on this machine (no
// registry is reachable) into docker-save tarballs under <Dir>/images
// once, and imported into the node's containerd at every start.

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/freshcache/freshcache/pkg/localup/realnode/imagetar"
)

// The image references the node serves. PauseImage is the sandbox image
// kubelet v1.37 and its kubeadm expect; BusyboxImage is the one upstream's
// e2e tests run.
const (
	PauseImage   = "registry.k8s.io/pause:3.10.2"
	BusyboxImage = "registry.k8s.io/e2e-test-images/busybox:1.37.0-2"
	// CoreDNSImage is the CoreDNS kubeadm v1.37 deploys (tools/coredns
	// builds that version).
	CoreDNSImage = "registry.k8s.io/coredns/coredns:v1.14.6"
	// AgnhostImage is the test image e2e.test v1.37.2 runs most of its
	// pods with.
	AgnhostImage = "registry.k8s.io/e2e-test-images/agnhost:2.66.1"
)

// agnhostTools are the host programs upstream's agnhost image carries
// (from Alpine's packages) that e2e tests call inside it: curl and nc
// for HTTP and TCP checks, dig for the DNS tests. nc comes with busybox;
// the others are Debian's, copied with the shared libraries they load.
var agnhostTools = []debPackage{
	{"curl", []string{"/usr/bin/curl"}},
	{"bind9-dnsutils", []string{"/usr/bin/dig"}},
}

// ErrNotStatic is wrapped when a binary meant for an image with nothing
// else in it is dynamically linked.
var ErrNotStatic = errors.New("realnode: binary is not statically linked")

// imageSpec is one image to build: its reference and how to make its
// content.
type imageSpec struct {
	file  string // under layout.imagesDir()
	image func() (imagetar.Image, error)
}

func (n *Node) imageSpecs() []imageSpec {
	specs := []imageSpec{
		{file: "pause.tar", image: func() (imagetar.Image, error) { return pauseImage(n.opts.PauseBinary) }},
		{file: "busybox.tar", image: func() (imagetar.Image, error) { return busyboxImage(n.opts.BusyboxBinary) }},
	}
	if n.opts.CoreDNSBinary != "" {
		specs = append(specs, imageSpec{file: "coredns.tar", image: func() (imagetar.Image, error) { return coreDNSImage(n.opts.CoreDNSBinary) }})
	}
	if n.opts.AgnhostBinary != "" {
		specs = append(specs, imageSpec{file: "agnhost.tar", image: func() (imagetar.Image, error) {
			return agnhostImage(n.opts.AgnhostBinary, n.opts.BusyboxBinary, n.opts.CoreDNSBinary)
		}})
	}
	return specs
}

// coreDNSImage is the statically linked CoreDNS alone, as upstream's image
// (which is distroless) nearly is.
func coreDNSImage(binary string) (imagetar.Image, error) {
	data, err := staticBinary(binary)
	if err != nil {
		return imagetar.Image{}, err
	}
	return imagetar.Image{
		Ref:        CoreDNSImage,
		Entrypoint: []string{"/coredns"},
		Files:      []imagetar.File{{Path: "coredns", Mode: 0o755, Data: data}},
	}, nil
}

// pauseImage is freshcache-pause alone, run as nobody as upstream's pause
// image is.
func pauseImage(binary string) (imagetar.Image, error) {
	data, err := staticBinary(binary)
	if err != nil {
		return imagetar.Image{}, err
	}
	return imagetar.Image{
		Ref:        PauseImage,
		Entrypoint: []string{"/pause"},
		User:       "65535:65535",
		Files:      []imagetar.File{{Path: "pause", Mode: 0o755, Data: data}},
	}, nil
}

// The users and groups of the busybox image; the agnhost image adds the
// ones an e2e test of supplemental groups expects to find in it.
const (
	basePasswd = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n"
	baseGroup  = "root:x:0:\nnogroup:x:65534:\n"
)

const shellPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// busyboxImage is Debian's static busybox with a link for every applet at
// the path busybox itself lists, and the few files a shell in a pod
// expects.
func busyboxImage(binary string) (imagetar.Image, error) {
	files, err := busyboxFiles(binary, basePasswd, baseGroup)
	if err != nil {
		return imagetar.Image{}, err
	}
	return imagetar.Image{
		Ref:   BusyboxImage,
		Env:   []string{shellPath},
		Cmd:   []string{"sh"},
		Files: files,
	}, nil
}

// busyboxFiles are busybox, its applet links, the given passwd and group,
// and the directories a shell expects.
func busyboxFiles(binary, passwd, group string) ([]imagetar.File, error) {
	data, err := staticBinary(binary)
	if err != nil {
		return nil, err
	}
	out, err := exec.Command(binary, "--list-full").Output()
	if err != nil {
		return nil, fmt.Errorf("realnode: %s --list-full: %w", binary, exitDetail(err))
	}
	files := []imagetar.File{
		{Path: "bin/busybox", Mode: 0o755, Data: data},
		{Path: "etc/passwd", Mode: 0o644, Data: []byte(passwd)},
		{Path: "etc/group", Mode: 0o644, Data: []byte(group)},
		{Path: "tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
		{Path: "root", Mode: fs.ModeDir | 0o700},
		{Path: "home", Mode: fs.ModeDir | 0o755},
	}
	return append(files, appletLinks(string(out))...), nil
}

// agnhostImage is what upstream's agnhost image holds that the e2e tests
// use: the agnhost program (built from k8s.io/kubernetes/test/images/
// agnhost at this module's version) as entrypoint with "pause" as its
// default command, and its second name agnhost-2; a shell with the
// usual tools (busybox); curl and dig with their libraries; CoreDNS, which
// DNS tests start inside it; the user and group a supplemental-groups
// test looks for; and /uploads for netexec.
func agnhostImage(agnhost, busybox, coredns string) (imagetar.Image, error) {
	data, err := staticBinary(agnhost)
	if err != nil {
		return imagetar.Image{}, err
	}
	files, err := busyboxFiles(busybox,
		basePasswd+"user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh\n",
		baseGroup+"user-defined-in-image:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\n")
	if err != nil {
		return imagetar.Image{}, err
	}
	files = append(files,
		imagetar.File{Path: "agnhost", Mode: 0o755, Data: data},
		imagetar.File{Path: "agnhost-2", Mode: fs.ModeSymlink | 0o777, Link: "agnhost"},
		imagetar.File{Path: "uploads", Mode: fs.ModeDir | 0o755},
	)
	if coredns != "" {
		cd, err := staticBinary(coredns)
		if err != nil {
			return imagetar.Image{}, err
		}
		files = append(files, imagetar.File{Path: "coredns", Mode: 0o755, Data: cd})
	}
	for _, tool := range agnhostTools {
		tf, err := hostProgram(tool.files[0])
		if err != nil {
			return imagetar.Image{}, err
		}
		files = mergeFiles(files, tf)
	}
	return imagetar.Image{
		Ref:        AgnhostImage,
		Env:        []string{shellPath},
		Entrypoint: []string{"/agnhost"},
		Cmd:        []string{"pause"},
		Files:      files,
	}, nil
}

// hostProgram is a dynamically linked program of this host with every
// shared library ldd resolves for it and the dynamic loader, each at the
// path the loader looks for it (symlinks copied as the file they name).
func hostProgram(path string) ([]imagetar.File, error) {
	out, err := exec.Command("ldd", path).Output()
	if err != nil {
		return nil, fmt.Errorf("realnode: ldd %s: %w", path, exitDetail(err))
	}
	paths := append([]string{path}, lddPaths(string(out))...)
	files := make([]imagetar.File, 0, len(paths))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("realnode: %s needs %w", path, err)
		}
		files = append(files, imagetar.File{Path: strings.TrimPrefix(p, "/"), Mode: 0o755, Data: data})
	}
	return files, nil
}

// lddPaths are the absolute paths ldd's output names: "name => /path
// (addr)" for a library, "/path (addr)" for the loader; the vDSO and
// libraries ldd could not find have none.
func lddPaths(out string) []string {
	var paths []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
			paths = append(paths, f[2])
		case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
			paths = append(paths, f[0])
		}
	}
	return paths
}

// mergeFiles appends the files of more whose path files lacks (two host
// programs share libc, say).
func mergeFiles(files, more []imagetar.File) []imagetar.File {
	have := make(map[string]bool, len(files))
	for _, f := range files {
		have[f.Path] = true
	}
	for _, f := range more {
		if !have[f.Path] {
			have[f.Path] = true
			files = append(files, f)
		}
	}
	return files
}

// appletLinks turns `busybox --list-full` ("usr/bin/env" per line) into
// symlinks to /bin/busybox, skipping busybox itself.
func appletLinks(list string) []imagetar.File {
	var files []imagetar.File
	seen := map[string]bool{"bin/busybox": true}
	for _, p := range strings.Fields(list) {
		p = strings.TrimPrefix(p, "/")
		if seen[p] {
			continue
		}
		seen[p] = true
		files = append(files, imagetar.File{Path: p, Mode: fs.ModeSymlink | 0o777, Link: "/bin/busybox"})
	}
	return files
}

// staticBinary reads an ELF binary and checks that it asks for no dynamic
// loader.
func staticBinary(path string) ([]byte, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("realnode: %s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return nil, fmt.Errorf("%w: %s", ErrNotStatic, path)
		}
	}
	return os.ReadFile(path)
}

// buildImages writes every image tarball whose content changed (the tarball
// is deterministic, so an unchanged one is left alone).
func (n *Node) buildImages() ([]string, error) {
	dir := n.layout.imagesDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	for _, spec := range n.imageSpecs() {
		img, err := spec.image()
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		if _, err := imagetar.Write(&buf, img); err != nil {
			return nil, fmt.Errorf("realnode: image %s: %w", img.Ref, err)
		}
		path := filepath.Join(dir, spec.file)
		if old, err := os.ReadFile(path); err != nil || !bytes.Equal(old, buf.Bytes()) {
			if err := writeFileAtomic(path, buf.Bytes()); err != nil {
				return nil, err
			}
			n.logf("built image %s into %s (%d KiB)", img.Ref, path, buf.Len()/1024)
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// importImages loads the tarballs into containerd's k8s.io namespace, the
// CRI plugin's.
func (n *Node) importImages(ctx context.Context, paths []string) error {
	for _, p := range paths {
		if err := run(ctx, "ctr", "--address", n.layout.containerdSocket(), "--namespace", "k8s.io", "images", "import", p); err != nil {
			return err
		}
	}
	return nil
}

func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
