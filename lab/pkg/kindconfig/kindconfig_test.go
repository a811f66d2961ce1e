package kindconfig

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	kindv1alpha4 "sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"
)

// parseKindConfig decodes a kind config strictly (unknown fields are
// errors, as in kind's own loader) into kind's v1alpha4 Cluster and applies
// kind's defaults.
func parseKindConfig(t *testing.T, raw []byte) *kindv1alpha4.Cluster {
	t.Helper()
	var c kindv1alpha4.Cluster
	if err := yaml.UnmarshalStrict(raw, &c); err != nil {
		t.Fatalf("kind config does not parse into v1alpha4.Cluster: %v\n%s", err, raw)
	}
	kindv1alpha4.SetDefaultsCluster(&c)
	return &c
}

// checkCluster checks that c runs our node image everywhere, passes the gate
// to kube-apiserver only, and enables the kubeadm patches directory that
// carries our kube-apiserver image; patch is the generated kubeadm patch.
// checkedFiles renders o's files and fails t unless they render and the
// kind config in them passes checkCluster.
func checkedFiles(t *testing.T, o Options) (map[string]string, *kindv1alpha4.Cluster) {
	t.Helper()
	files, err := Files(o)
	if err != nil {
		t.Fatal(err)
	}
	c := parseKindConfig(t, []byte(files[KindConfigFile]))
	checkCluster(t, c, []byte(files[KubeadmPatch]), o)
	return files, c
}

func checkCluster(t *testing.T, c *kindv1alpha4.Cluster, patch []byte, o Options) {
	t.Helper()
	if c.Kind != "Cluster" || c.APIVersion != "kind.x-k8s.io/v1alpha4" {
		t.Errorf("TypeMeta = %s/%s", c.APIVersion, c.Kind)
	}
	if c.Name != o.ClusterName {
		t.Errorf("name = %q, want %q", c.Name, o.ClusterName)
	}
	var cps, workers int
	for i, n := range c.Nodes {
		switch n.Role {
		case kindv1alpha4.ControlPlaneRole:
			cps++
		case kindv1alpha4.WorkerRole:
			workers++
		}
		if n.Image != o.NodeImage {
			t.Errorf("node %d image = %q, want %q", i, n.Image, o.NodeImage)
		}
	}
	if cps != o.ControlPlanes || workers != o.Workers {
		t.Errorf("control planes, workers = %d, %d; want %d, %d", cps, workers, o.ControlPlanes, o.Workers)
	}
	if len(c.FeatureGates) != 0 {
		t.Errorf("kind featureGates = %v: they would reach the stock kubelet, controller-manager and scheduler", c.FeatureGates)
	}

	found := map[string]bool{}
	for _, p := range c.KubeadmConfigPatches {
		var doc struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			APIServer  struct {
				ExtraArgs []struct{ Name, Value string } `json:"extraArgs"`
			} `json:"apiServer"`
			Patches struct {
				Directory string `json:"directory"`
			} `json:"patches"`
			FailCgroupV1 *bool `json:"failCgroupV1"`
		}
		if err := yaml.UnmarshalStrict([]byte(p), &doc); err != nil {
			t.Fatalf("kubeadm config patch does not parse: %v\n%s", err, p)
		}
		wantAPIVersion := "kubeadm.k8s.io/v1beta4"
		if doc.Kind == "KubeletConfiguration" {
			wantAPIVersion = "kubelet.config.k8s.io/v1beta1"
		}
		if doc.APIVersion != wantAPIVersion {
			t.Errorf("patch for %s has apiVersion %q, want %q", doc.Kind, doc.APIVersion, wantAPIVersion)
		}
		switch doc.Kind {
		case "KubeletConfiguration":
			if doc.FailCgroupV1 != nil && !*doc.FailCgroupV1 {
				found["failCgroupV1"] = true
			}
		case "ClusterConfiguration":
			for _, a := range doc.APIServer.ExtraArgs {
				if a.Name == "feature-gates" && strings.Contains(a.Value, "FreshResourceVersionZero=true") {
					found["gate"] = true
				}
			}
		case "InitConfiguration", "JoinConfiguration":
			if doc.Patches.Directory == NodePatchesDir {
				found[doc.Kind] = true
			}
		}
	}
	for _, want := range []string{"gate", "InitConfiguration", "JoinConfiguration", "failCgroupV1"} {
		if !found[want] {
			t.Errorf("kind config lacks the %s patch:\n%s", want, strings.Join(c.KubeadmConfigPatches, "---\n"))
		}
	}

	var pod struct {
		Spec struct {
			Containers []struct {
				Name            string `json:"name"`
				Image           string `json:"image"`
				ImagePullPolicy string `json:"imagePullPolicy"`
			} `json:"containers"`
		} `json:"spec"`
	}
	if err := yaml.UnmarshalStrict(patch, &pod); err != nil {
		t.Fatalf("kubeadm patch does not parse: %v\n%s", err, patch)
	}
	if len(pod.Spec.Containers) != 1 || pod.Spec.Containers[0].Name != "kube-apiserver" ||
		pod.Spec.Containers[0].Image != o.APIServerImage || pod.Spec.Containers[0].ImagePullPolicy != "Never" {
		t.Errorf("kubeadm patch = %+v, want kube-apiserver with image %s, imagePullPolicy Never", pod.Spec.Containers, o.APIServerImage)
	}
}

func TestKindConfig(t *testing.T) {
	for _, cps := range []int{1, 3} {
		t.Run(fmt.Sprintf("control-planes=%d", cps), func(t *testing.T) {
			o := Defaults()
			o.ControlPlanes = cps
			files, _ := checkedFiles(t, o)

			if df := files[APIServerContext+"/Dockerfile"]; !strings.Contains(df, "FROM --platform=linux/amd64 registry.k8s.io/kube-apiserver:v1.37.2\n") ||
				!strings.Contains(df, "COPY kube-apiserver /usr/local/bin/kube-apiserver\n") {
				t.Errorf("kube-apiserver Dockerfile:\n%s", df)
			}
			df := files[NodeContext+"/Dockerfile"]
			for _, want := range []string{"FROM --platform=linux/amd64 kindest/node:v1.37.2\n", "COPY images/ " + NodeImagesDir, "COPY patches/ " + NodePatchesDir, ImportUnit} {
				if !strings.Contains(df, want) {
					t.Errorf("node Dockerfile lacks %q:\n%s", want, df)
				}
			}
			if s := files[NodeContext+"/"+ImportUnit]; !strings.Contains(s, "Before=kubelet.service") || !strings.Contains(s, "After=containerd.service") {
				t.Errorf("import unit is not ordered between containerd and the kubelet:\n%s", s)
			}
			if s := files[NodeContext+"/import-images.sh"]; !strings.Contains(s, "ctr --namespace=k8s.io images import") || !strings.Contains(s, o.APIServerImage) {
				t.Errorf("import script:\n%s", s)
			}
		})
	}
}

// TestDisableDefaultCNI: the offline node image has no kindnetd, so the
// kind config turns kind's default CNI off; by default it stays on.
func TestDisableDefaultCNI(t *testing.T) {
	for _, disable := range []bool{false, true} {
		o := Defaults()
		o.DisableDefaultCNI = disable
		files, c := checkedFiles(t, o)
		if c.Networking.DisableDefaultCNI != disable {
			t.Errorf("DisableDefaultCNI=%t: kind config has networking.disableDefaultCNI=%t:\n%s", disable, c.Networking.DisableDefaultCNI, files[KindConfigFile])
		}
	}
}

func TestExtraArgsAndGates(t *testing.T) {
	o := Defaults()
	o.FeatureGates = map[string]bool{"FreshResourceVersionZero": true, "ConsistentReadsFromCache": false}
	o.APIServerArgs = map[string]string{"consistent-read-timeout-action": "reject", "consistent-read-timeout": "1s"}
	files, _ := checkedFiles(t, o)
	for _, want := range []string{
		`value: "ConsistentReadsFromCache=false,FreshResourceVersionZero=true"`,
		"- name: consistent-read-timeout\n      value: \"1s\"\n    - name: consistent-read-timeout-action\n      value: \"reject\"",
	} {
		if !strings.Contains(files[KindConfigFile], want) {
			t.Errorf("kind config lacks %q:\n%s", want, files[KindConfigFile])
		}
	}
}

func TestValidate(t *testing.T) {
	for name, mutate := range map[string]func(*Options){
		"even control planes": func(o *Options) { o.ControlPlanes = 2 },
		"no control plane":    func(o *Options) { o.ControlPlanes = 0 },
		"negative workers":    func(o *Options) { o.Workers = -1 },
		"latest tag":          func(o *Options) { o.APIServerImage = "example.com/kube-apiserver:latest" },
		"no tag":              func(o *Options) { o.APIServerImage = "example.com:5000/kube-apiserver" },
		"bad name":            func(o *Options) { o.ClusterName = "Fresh_Cache" },
		"feature-gates arg":   func(o *Options) { o.APIServerArgs = map[string]string{"feature-gates": "A=true"} },
		"dashed arg":          func(o *Options) { o.APIServerArgs = map[string]string{"--v": "4"} },
		"quoted value":        func(o *Options) { o.APIServerArgs = map[string]string{"v": `4"`} },
	} {
		o := Defaults()
		mutate(&o)
		if _, err := Files(o); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if err := Defaults().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

// repoRoot finds the root module's directory from the test's working
// directory (the package directory).
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/freshcache/freshcache\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("root module not found")
		}
		dir = parent
	}
}

// TestKindUpDryRun runs hack/kind-up.sh --dry-run and checks the files it
// writes and the commands it prints. It needs bash and go, not Docker.
func TestKindUpDryRun(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not found")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not found")
	}
	root := repoRoot(t)
	online := "mode: online (node base kindest/node:v1.37.2, kube-apiserver base registry.k8s.io/kube-apiserver:v1.37.2)\n"
	offline := "mode: offline (node base freshcache.local/kind-node-base:v1.37.2, kube-apiserver base freshcache.local/kube-apiserver-base:v1.37.2)\n"
	for _, tc := range []struct {
		name string
		args []string
		cps  int
		mode string // the line naming the path and its base images
	}{
		// No Docker answers, so the offline images are absent: the
		// published bases, as for a user whose Docker can pull.
		{"single", nil, 1, online},
		{"ha", []string{"--ha", "--name", "fc-ha"}, 3, online},
		{"offline", []string{"--offline"}, 1, offline},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "kind out") // a space, to check quoting
			cmd := exec.Command(bash, append([]string{filepath.Join(root, "hack", "kind-up.sh"), "--dry-run"}, tc.args...)...)
			cmd.Dir = t.TempDir() // the script must not depend on the caller's directory
			cmd.Env = append(os.Environ(), "OUT="+out, "GO="+goBin, "DOCKER=/nonexistent/docker", "KIND=/nonexistent/kind")
			b, err := cmd.CombinedOutput()
			stdout := string(b)
			if err != nil {
				t.Fatalf("kind-up.sh --dry-run: %v\n%s", err, stdout)
			}

			if !strings.Contains(stdout, tc.mode) {
				t.Errorf("output lacks %q:\n%s", tc.mode, stdout)
			}
			o := Defaults()
			o.ControlPlanes = tc.cps
			if tc.cps == 3 {
				o.ClusterName = "fc-ha"
			}
			if tc.mode == offline {
				o.APIServerBase = "freshcache.local/kube-apiserver-base:v1.37.2"
				o.NodeBase = "freshcache.local/kind-node-base:v1.37.2"
				o.DisableDefaultCNI = true
			}
			for ctx, base := range map[string]string{APIServerContext: o.APIServerBase, NodeContext: o.NodeBase} {
				df, err := os.ReadFile(filepath.Join(out, ctx, "Dockerfile"))
				if err != nil || !strings.Contains(string(df), "FROM --platform=linux/amd64 "+base+"\n") {
					t.Errorf("%s/Dockerfile is not FROM %s (%v):\n%s", ctx, base, err, df)
				}
			}
			for _, f := range []string{KindConfigFile, APIServerContext + "/Dockerfile", NodeContext + "/Dockerfile",
				NodeContext + "/" + ImportUnit, NodeContext + "/10-freshcache-images.conf", NodeContext + "/import-images.sh", KubeadmPatch} {
				if _, err := os.Stat(filepath.Join(out, f)); err != nil {
					t.Errorf("generated file missing: %v", err)
				}
			}
			if st, err := os.Stat(filepath.Join(out, NodeContext, "import-images.sh")); err == nil && st.Mode()&0o100 == 0 {
				t.Errorf("import-images.sh is not executable: %v", st.Mode())
			}
			raw, err := os.ReadFile(filepath.Join(out, KindConfigFile))
			if err != nil {
				t.Fatal(err)
			}
			patch, err := os.ReadFile(filepath.Join(out, KubeadmPatch))
			if err != nil {
				t.Fatal(err)
			}
			c := parseKindConfig(t, raw)
			checkCluster(t, c, patch, o)
			if c.Networking.DisableDefaultCNI != o.DisableDefaultCNI {
				t.Errorf("networking.disableDefaultCNI = %t, want %t (kindnetd only online)", c.Networking.DisableDefaultCNI, o.DisableDefaultCNI)
			}

			q := strings.ReplaceAll(out, " ", `\ `) // printf %q quoting of the space
			var cmds []string
			for _, line := range strings.Split(stdout, "\n") {
				if strings.HasPrefix(line, "+ ") {
					cmds = append(cmds, line)
				}
			}
			want := []string{
				"+ env CGO_ENABLED=0 GOOS=linux GOARCH=amd64 " + goBin + " build -trimpath -o " + q + "/apiserver/kube-apiserver ./cmd/kube-apiserver",
				"+ /nonexistent/docker build --platform linux/amd64 -t " + o.APIServerImage + " " + q + "/apiserver",
				"+ /nonexistent/docker save -o " + q + "/node/images/kube-apiserver.tar " + o.APIServerImage,
				"+ /nonexistent/docker build --platform linux/amd64 -t " + o.NodeImage + " " + q + "/node",
				"+ /nonexistent/kind create cluster --name " + o.ClusterName + " --config " + q + "/kind-config.yaml --wait 5m",
			}
			if len(cmds) < len(want) {
				t.Fatalf("printed commands:\n%s\nwant at least:\n%s", strings.Join(cmds, "\n"), strings.Join(want, "\n"))
			}
			for i, w := range want {
				if cmds[i] != w {
					t.Errorf("command %d:\n got %s\nwant %s", i+1, cmds[i], w)
				}
			}
			if !strings.Contains(stdout, "get --raw /metrics") || !strings.Contains(stdout, "dry run: nothing was built or started") {
				t.Errorf("output:\n%s", stdout)
			}
			if _, err := os.Stat(filepath.Join(out, APIServerBinary)); err == nil {
				t.Errorf("dry run built %s", APIServerBinary)
			}
		})
	}
}
