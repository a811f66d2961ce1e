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
)

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

// busyboxImage is Debian's static busybox with a link for every applet at
// the path busybox itself lists, and the few files a shell in a pod
// expects.
func busyboxImage(binary string) (imagetar.Image, error) {
	data, err := staticBinary(binary)
	if err != nil {
		return imagetar.Image{}, err
	}
	out, err := exec.Command(binary, "--list-full").Output()
	if err != nil {
		return imagetar.Image{}, fmt.Errorf("realnode: %s --list-full: %w", binary, exitDetail(err))
	}
	files := []imagetar.File{
		{Path: "bin/busybox", Mode: 0o755, Data: data},
		{Path: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n")},
		{Path: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnogroup:x:65534:\n")},
		{Path: "tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
		{Path: "root", Mode: fs.ModeDir | 0o700},
		{Path: "home", Mode: fs.ModeDir | 0o755},
	}
	files = append(files, appletLinks(string(out))...)
	return imagetar.Image{
		Ref:   BusyboxImage,
		Env:   []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		Cmd:   []string{"sh"},
		Files: files,
	}, nil
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
