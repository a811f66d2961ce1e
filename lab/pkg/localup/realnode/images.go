package realnode

// The images a real node runs, built from files on this machine (no
// registry is reachable) into docker-save tarballs under <Dir>/images
// once, and imported into the node's containerd at every start.

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"debug/elf"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/freshcache/freshcache/lab/pkg/localup/realnode/imagetar"
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
	// AgnhostPrevImage is the previous agnhost e2e.test also runs (its
	// StatefulSets' web servers); the same image carries both names.
	AgnhostPrevImage = "registry.k8s.io/e2e-test-images/agnhost:2.55"
	// GlibcDNSImage is the DNS tests' second querier: upstream's is Debian
	// with dnsutils, to resolve through glibc as well as through musl.
	GlibcDNSImage = "registry.k8s.io/e2e-test-images/glibc-dns-testing:2.1.1"
)

// hostTool is a program of a Debian package copied into an image, with
// its libraries, at path (its own path if empty).
type hostTool struct {
	pkg, file, path string
}

// agnhostTools are the host programs upstream's agnhost image carries
// (from Alpine's packages) that e2e tests call inside it: curl for HTTP
// checks, OpenBSD's netcat for TCP and UDP checks ("nc -v -t -w 2", which
// busybox's nc lacks), dig and getent for the DNS tests and ss for the
// NodePort ones.
var agnhostTools = []hostTool{
	// Debian's static busybox runs its own applets before $PATH (its
	// shell is built "standalone"), so with busybox as /bin/sh a script's
	// "nc" is busybox's whatever /usr/bin holds. Alpine's busybox, in
	// upstream's image, is not built so; dash as /bin/sh gives the same
	// lookup. bash is there too, as in upstream's image.
	{"dash", "/bin/dash", "/bin/sh"},
	{"bash", "/bin/bash", ""},
	{"curl", "/usr/bin/curl", ""},
	{"netcat-openbsd", "/bin/nc.openbsd", "/usr/bin/nc"},
	{"bind9-dnsutils", "/usr/bin/dig", ""},
	{"iproute2", "/bin/ss", ""},
	{"libc-bin", "/usr/bin/getent", ""},
}

// glibcDNSTools are the glibc programs of GlibcDNSImage: dig and getent.
var glibcDNSTools = []hostTool{
	{"bind9-dnsutils", "/usr/bin/dig", ""},
	{"libc-bin", "/usr/bin/getent", ""},
}

// agnhostPackages are the packages of agnhostTools and glibcDNSTools.
func agnhostPackages() []debPackage {
	var pkgs []debPackage
	for _, t := range append(append([]hostTool(nil), agnhostTools...), glibcDNSTools...) {
		pkgs = append(pkgs, debPackage{t.pkg, []string{t.file}})
	}
	return pkgs
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
	}
	if n.opts.CoreDNSBinary != "" {
		specs = append(specs, imageSpec{file: "coredns.tar", image: func() (imagetar.Image, error) { return coreDNSImage(n.opts.CoreDNSBinary) }})
	}
	return append(specs, E2EImages{
		BusyboxBinary: n.opts.BusyboxBinary, AgnhostBinary: n.opts.AgnhostBinary, CoreDNSBinary: n.opts.CoreDNSBinary,
	}.specs(n.layout.imagesDir())...)
}

// E2EImages are the test images of upstream's e2e suite that this
// package builds: BusyboxImage always, AgnhostImage and GlibcDNSImage
// when AgnhostBinary is set. Another cluster (kind's nodes, say) can load
// the tarballs Write makes.
type E2EImages struct {
	// BusyboxBinary is a statically linked busybox (Debian's
	// busybox-static); AgnhostBinary the statically linked agnhost
	// (make build-e2e-suite); CoreDNSBinary, when set, goes into the
	// agnhost image, where DNS tests start it.
	BusyboxBinary, AgnhostBinary, CoreDNSBinary string
	// Install lets Write run apt-get for the Debian packages the images
	// take programs from (busybox-static; curl, dig and the others of the
	// agnhost image).
	Install bool
}

func (e E2EImages) specs(keyDir string) []imageSpec {
	specs := []imageSpec{{file: "busybox.tar", image: func() (imagetar.Image, error) { return busyboxImage(e.BusyboxBinary) }}}
	if e.AgnhostBinary != "" {
		specs = append(specs, imageSpec{file: "agnhost.tar", image: func() (imagetar.Image, error) {
			return agnhostImage(e.AgnhostBinary, e.BusyboxBinary, e.CoreDNSBinary, keyDir)
		}}, imageSpec{file: "glibc-dns-testing.tar", image: func() (imagetar.Image, error) {
			return glibcDNSImage(e.BusyboxBinary)
		}})
	}
	return specs
}

// Write installs the missing packages (with Install), writes the images'
// docker-save tarballs into dir (an unchanged one is left alone) and
// returns their paths.
func (e E2EImages) Write(ctx context.Context, dir string, logf func(string, ...any)) ([]string, error) {
	pkgs := []debPackage{{"busybox-static", []string{e.BusyboxBinary}}}
	if e.AgnhostBinary != "" {
		pkgs = append(pkgs, agnhostPackages()...)
	}
	if err := installPackages(ctx, pkgs, e.Install, logf); err != nil {
		return nil, err
	}
	return writeImages(dir, e.specs(dir), logf)
}

// coreDNSImage is the statically linked CoreDNS alone, as upstream's image
// (which is distroless) nearly is.
func coreDNSImage(binary string) (imagetar.Image, error) {
	return singleBinaryImage(binary, CoreDNSImage, "coredns", "")
}

// pauseImage is freshcache-pause alone, run as nobody as upstream's pause
// image is.
func pauseImage(binary string) (imagetar.Image, error) {
	return singleBinaryImage(binary, PauseImage, "pause", "65535:65535")
}

// singleBinaryImage is an image ref holding only the statically linked
// binary, as /name, which is its entrypoint, run as user ("" for root).
func singleBinaryImage(binary, ref, name, user string) (imagetar.Image, error) {
	data, err := staticBinary(binary)
	if err != nil {
		return imagetar.Image{}, err
	}
	return imagetar.Image{
		Ref:        ref,
		Entrypoint: []string{"/" + name},
		User:       user,
		Files:      []imagetar.File{{Path: name, Mode: 0o755, Data: data}},
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
// test looks for; /uploads for netexec; and /localhost.crt and
// /localhost.key, a TLS pair for "localhost" that probe and lifecycle
// tests serve HTTPS with (made once, kept in keyDir).
func agnhostImage(agnhost, busybox, coredns, keyDir string) (imagetar.Image, error) {
	data, err := staticBinary(agnhost)
	if err != nil {
		return imagetar.Image{}, err
	}
	crt, key, err := localhostPair(keyDir)
	if err != nil {
		return imagetar.Image{}, err
	}
	// The host tools come first: where one has an applet's name (nc), it
	// wins over busybox's.
	files, err := hostTools(agnhostTools)
	if err != nil {
		return imagetar.Image{}, err
	}
	bb, err := busyboxFiles(busybox,
		basePasswd+"user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh\n",
		baseGroup+"user-defined-in-image:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\n")
	if err != nil {
		return imagetar.Image{}, err
	}
	files = mergeFiles(files, bb)
	files = append(files,
		imagetar.File{Path: "agnhost", Mode: 0o755, Data: data},
		imagetar.File{Path: "agnhost-2", Mode: fs.ModeSymlink | 0o777, Link: "agnhost"},
		imagetar.File{Path: "uploads", Mode: fs.ModeDir | 0o755},
		imagetar.File{Path: "localhost.crt", Mode: 0o644, Data: crt},
		imagetar.File{Path: "localhost.key", Mode: 0o644, Data: key},
	)
	if coredns != "" {
		cd, err := staticBinary(coredns)
		if err != nil {
			return imagetar.Image{}, err
		}
		files = append(files, imagetar.File{Path: "coredns", Mode: 0o755, Data: cd})
	}
	return imagetar.Image{
		Ref:        AgnhostImage,
		AlsoRefs:   []string{AgnhostPrevImage},
		Env:        []string{shellPath},
		Entrypoint: []string{"/agnhost"},
		Cmd:        []string{"pause"},
		Files:      files,
	}, nil
}

// glibcDNSImage is what the DNS tests' glibc querier runs: a shell
// (busybox) with glibc's dig and getent, hosts looked up in /etc/hosts
// before DNS.
func glibcDNSImage(busybox string) (imagetar.Image, error) {
	files, err := hostTools(glibcDNSTools)
	if err != nil {
		return imagetar.Image{}, err
	}
	bb, err := busyboxFiles(busybox, basePasswd, baseGroup)
	if err != nil {
		return imagetar.Image{}, err
	}
	files = mergeFiles(files, bb)
	files = append(files, imagetar.File{Path: "etc/nsswitch.conf", Mode: 0o644, Data: []byte("passwd: files\ngroup: files\nhosts: files dns\n")})
	return imagetar.Image{Ref: GlibcDNSImage, Env: []string{shellPath}, Cmd: []string{"sh"}, Files: files}, nil
}

// hostTools are the files of tools, the first copy of a shared library
// kept.
func hostTools(tools []hostTool) ([]imagetar.File, error) {
	var files []imagetar.File
	for _, tool := range tools {
		tf, err := hostProgram(tool.file, tool.path)
		if err != nil {
			return nil, err
		}
		files = mergeFiles(files, tf)
	}
	return files, nil
}

// localhostPair is a self-signed certificate for localhost and 127.0.0.1
// and its key, PEM-encoded, read from dir or made there once (so that the
// image, and its tarball, stay the same from one start to the next).
func localhostPair(dir string) (crt, key []byte, err error) {
	crtPath, keyPath := filepath.Join(dir, "localhost.crt"), filepath.Join(dir, "localhost.key")
	crt, cerr := os.ReadFile(crtPath)
	key, kerr := os.ReadFile(keyPath)
	if cerr == nil && kerr == nil {
		return crt, key, nil
	}
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(now.UnixNano()),
		Subject:               pkix.Name{CommonName: "localhost"},
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(priv)
	if err != nil {
		return nil, nil, err
	}
	crt = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	key = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	if err := writeFileAtomic(keyPath, key); err != nil {
		return nil, nil, err
	}
	if err := writeFileAtomic(crtPath, crt); err != nil {
		return nil, nil, err
	}
	return crt, key, nil
}

// hostProgram is a dynamically linked program of this host, at as in the
// image (its own path if as is empty), with every shared library ldd
// resolves for it and the dynamic loader, each at the path the loader
// looks for it (symlinks copied as the file they name).
func hostProgram(path, as string) ([]imagetar.File, error) {
	out, err := exec.Command("ldd", path).Output()
	if err != nil {
		return nil, fmt.Errorf("realnode: ldd %s: %w", path, exitDetail(err))
	}
	if as == "" {
		as = path
	}
	files := []imagetar.File{{Path: strings.TrimPrefix(as, "/")}}
	paths := append([]string{path}, lddPaths(string(out))...)
	for i, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("realnode: %s needs %w", path, err)
		}
		if i == 0 {
			files[0].Mode, files[0].Data = 0o755, data
			continue
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
// symlinks to /bin/busybox at that path and in /bin, skipping busybox
// itself.
func appletLinks(list string) []imagetar.File {
	var files []imagetar.File
	seen := map[string]bool{"bin/busybox": true}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			files = append(files, imagetar.File{Path: p, Mode: fs.ModeSymlink | 0o777, Link: "/bin/busybox"})
		}
	}
	for _, p := range strings.Fields(list) {
		p = strings.TrimPrefix(p, "/")
		add(p)
		// Upstream's busybox image has every applet in /bin (e2e tests
		// run /bin/sysctl, say), Debian's lists some in sbin or usr.
		add("bin/" + filepath.Base(p))
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
	return writeImages(n.layout.imagesDir(), n.imageSpecs(), n.logf)
}

// writeImages writes the tarball of every spec into dir, where its
// content changed, and returns their paths.
func writeImages(dir string, specs []imageSpec, logf func(string, ...any)) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	for _, spec := range specs {
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
			logf("built image %s into %s (%d KiB)", img.Ref, path, buf.Len()/1024)
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
