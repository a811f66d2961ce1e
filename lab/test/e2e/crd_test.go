package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
)

// TestCustomResourcesAndKubectlWatch checks the paths that reach the cache
// through apiextensions (the CRD getter) and a long-running kubectl watch.
func TestCustomResourcesAndKubectlWatch(t *testing.T) {
	for _, impl := range implementations {
		t.Run(impl, func(t *testing.T) {
			l := startLocalUp(t, "--watch-cache-implementation="+impl)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			t.Run("crd", func(t *testing.T) { customResources(ctx, t, l) })
			t.Run("kubectl-get-pods-w", func(t *testing.T) { kubectlWatchesPods(ctx, t, l) })
		})
	}
}

var widgets = schema.GroupVersionResource{Group: "e2e.freshcache.dev", Version: "v1", Resource: "widgets"}

func customResources(ctx context.Context, t *testing.T, l *localUp) {
	ext, err := apiextensionsclient.NewForConfig(l.restConfig(t, 0))
	if err != nil {
		t.Fatal(err)
	}
	preserve := true
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: widgets.Resource + "." + widgets.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: widgets.Group,
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &preserve,
				}},
			}},
		},
	}
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CRD: %v", err)
	}
	// The CRD's established condition is set by a controller inside the
	// apiserver; until then its endpoint answers 404.
	waitFor(ctx, t, "the CRD to be established", func() (bool, string) {
		got, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, ""
			}
		}
		return false, "not established"
	})

	dyn, err := dynamic.NewForConfig(l.restConfig(t, 0))
	if err != nil {
		t.Fatal(err)
	}
	res := dyn.Resource(widgets).Namespace("default")
	var list *unstructured.UnstructuredList
	waitFor(ctx, t, "the widgets endpoint to serve", func() (bool, string) {
		list, err = res.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	w, err := res.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		t.Fatalf("watch widgets: %v", err)
	}
	defer w.Stop()

	for i := 0; i < 3; i++ {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": widgets.GroupVersion().String(), "kind": "Widget",
			"metadata": map[string]any{"name": fmt.Sprintf("w-%d", i)},
			"spec":     map[string]any{"size": int64(i)},
		}}
		if _, err := res.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create widget %d: %v", i, err)
		}
	}
	seen := map[string]bool{}
	timeout := time.NewTimer(time.Minute)
	defer timeout.Stop()
	for len(seen) < 3 {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("widget watch closed after %v", seen)
			}
			if ev.Type != watch.Added {
				t.Fatalf("unexpected %s event on a create-only stream", ev.Type)
			}
			seen[ev.Object.(*unstructured.Unstructured).GetName()] = true
		case <-timeout.C:
			t.Fatalf("widget watch delivered %v within 1m, want 3 ADDED", seen)
		}
	}
	all, err := res.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Items) != 3 {
		t.Fatalf("consistent list of widgets returned %d, want 3", len(all.Items))
	}
	one, err := res.Get(ctx, "w-2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if size, _, _ := unstructured.NestedInt64(one.Object, "spec", "size"); size != 2 {
		t.Fatalf("widget w-2 has spec.size %d, want 2", size)
	}
}

func kubectlWatchesPods(ctx context.Context, t *testing.T, l *localUp) {
	cs := l.client(t, 0)
	ns := createNamespace(ctx, t, cs, "watch-"+strings.ReplaceAll(strings.ToLower(t.Name()), "/", "-")[:20])
	kc := l.kubeconfigs[0]
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	cmd := exec.CommandContext(wctx, bin("kubectl"), "--kubeconfig="+kc, "get", "pods", "-n", ns, "-w", "--no-headers")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stop(); _ = cmd.Wait() }()

	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// kubectl prints nothing for an empty namespace, so create pods until it
	// shows one: the first may be created before its watch is established.
	created := 0
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("kubectl get pods -w exited before it showed a pod")
			}
			if strings.HasPrefix(line, "watched-") && strings.Contains(line, "Pending") {
				return
			}
		case <-tick.C:
			if created < 10 {
				p := pod(fmt.Sprintf("watched-%d", created))
				if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				created++
			}
		case <-ctx.Done():
			t.Fatalf("kubectl get pods -w showed no created pod")
		}
	}
}
