package apiserver

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	apiextensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	genericapiserver "k8s.io/apiserver/pkg/server"
	aggregatorapiserver "k8s.io/kube-aggregator/pkg/apiserver"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/pkg/controlplane"
	controlplaneapiserver "k8s.io/kubernetes/pkg/controlplane/apiserver"

	"github.com/freshcache/watchcache"
)

func TestFlagParsing(t *testing.T) {
	cases := []struct {
		args    []string
		want    Implementation
		wantErr string
	}{
		{nil, DefaultImplementation, ""},
		{[]string{"--watch-cache-implementation=upstream"}, Upstream, ""},
		{[]string{"--watch-cache-implementation=freshcache"}, Freshcache, ""},
		{[]string{"--watch-cache-implementation=bogus"}, "", `"bogus", valid values are freshcache|upstream`},
		{[]string{"--watch-cache-implementation="}, "", "valid values are freshcache|upstream"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			o := NewOptions()
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			o.AddFlags(fs)
			err := fs.Parse(tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.WatchCacheImplementation != tc.want {
				t.Fatalf("got %q, want %q", o.WatchCacheImplementation, tc.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Options)
		want   string
	}{
		{"defaults", func(*Options) {}, ""},
		{"upstream", func(o *Options) { o.WatchCacheImplementation = Upstream }, ""},
		{"reject on timeout", func(o *Options) { o.ConsistentReadTimeoutAction = watchcache.TimeoutReject }, ""},
		{"unknown implementation", func(o *Options) { o.WatchCacheImplementation = "x" }, "freshcache|upstream"},
		{"zero timeout", func(o *Options) { o.ConsistentReadTimeout = 0 }, "--consistent-read-timeout=0s"},
		{"negative timeout", func(o *Options) { o.ConsistentReadTimeout = -time.Second }, "must be positive"},
		{"unknown action", func(o *Options) { o.ConsistentReadTimeoutAction = "retry" }, "fallback|reject"},
		{"unbounded fallback", func(o *Options) { o.ConsistentReadFallbackBudget = -1 }, ""},
		{"half a cache of fallbacks", func(o *Options) { o.ConsistentReadFallbackBudget = 0.5 }, ""},
		{"zero budget", func(o *Options) { o.ConsistentReadFallbackBudget = 0 }, "--consistent-read-fallback-budget=0"},
		{"NaN budget", func(o *Options) { o.ConsistentReadFallbackBudget = math.NaN() }, "must be positive"},
		{"strict rv=0", func(o *Options) { o.ResourceVersionZeroMaxStaleness = 0 }, ""},
		{"negative rv=0 staleness", func(o *Options) { o.ResourceVersionZeroMaxStaleness = -time.Millisecond }, "--resource-version-zero-max-staleness=-1ms"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			tc.mutate(o)
			errs := o.Validate()
			if tc.want == "" {
				if len(errs) != 0 {
					t.Fatalf("unexpected errors %v", errs)
				}
				return
			}
			if len(errs) == 0 || !strings.Contains(errs[0].Error(), tc.want) {
				t.Fatalf("errors %v, want one containing %q", errs, tc.want)
			}
		})
	}
}

func TestTimeoutFlags(t *testing.T) {
	o := NewOptions()
	if o.WatchCacheImplementation != Freshcache || o.ConsistentReadTimeout != 3*time.Second || o.ConsistentReadTimeoutAction != watchcache.TimeoutFallback {
		t.Fatalf("defaults %+v, want freshcache, 3s, fallback", o)
	}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	o.AddFlags(fs)
	if o.ConsistentReadFallbackBudget != watchcache.DefaultFallbackBudget {
		t.Fatalf("default fallback budget %v, want %v", o.ConsistentReadFallbackBudget, watchcache.DefaultFallbackBudget)
	}
	if err := fs.Parse([]string{"--consistent-read-timeout=750ms", "--consistent-read-timeout-action=reject", "--consistent-read-fallback-budget=0.25"}); err != nil {
		t.Fatal(err)
	}
	wc := o.WatchcacheOptions()
	if wc.ConsistentReadTimeout != 750*time.Millisecond || wc.TimeoutAction != watchcache.TimeoutReject || wc.FallbackBudget != 0.25 {
		t.Fatalf("flags did not reach the library options: %+v", wc)
	}
	if wc.ZeroReadStaleness != watchcache.DefaultZeroReadStaleness {
		t.Fatalf("default rv=0 staleness reached the library as %v, want %v", wc.ZeroReadStaleness, watchcache.DefaultZeroReadStaleness)
	}
	if err := fs.Parse([]string{"--resource-version-zero-max-staleness=0"}); err != nil {
		t.Fatal(err)
	}
	if wc := o.WatchcacheOptions(); wc.ZeroReadStaleness >= 0 {
		t.Fatalf("--resource-version-zero-max-staleness=0 reached the library as %v, want negative (strict)", wc.ZeroReadStaleness)
	}
	if err := fs.Parse([]string{"--resource-version-zero-max-staleness=250ms"}); err != nil {
		t.Fatal(err)
	}
	if wc := o.WatchcacheOptions(); wc.ZeroReadStaleness != 250*time.Millisecond {
		t.Fatalf("--resource-version-zero-max-staleness=250ms reached the library as %v", wc.ZeroReadStaleness)
	}
	err := fs.Parse([]string{"--consistent-read-timeout-action=later"})
	if err == nil || !strings.Contains(err.Error(), "fallback|reject") {
		t.Fatalf("unknown action: %v", err)
	}
	if err := fs.Parse([]string{"--consistent-read-timeout=soon"}); err == nil {
		t.Fatal("a malformed duration was accepted")
	}
}

func TestDecoratorPerImplementation(t *testing.T) {
	for _, impl := range Implementations {
		o := NewOptions()
		o.WatchCacheImplementation = impl
		d, err := o.Decorator()
		if err != nil || !IsCaching(d) {
			t.Fatalf("%s: decorator %v, err %v; want a caching decorator", impl, d, err)
		}
	}
	o := NewOptions()
	o.WatchCacheImplementation = "nope"
	if _, err := o.Decorator(); err == nil {
		t.Fatal("unknown implementation gave a decorator")
	}
}

// fixedGetter hands out one decorator for every resource, except those
// listed as uncached, which get UndecoratedStorage as upstream does for
// --watch-cache-sizes=<resource>#0.
type fixedGetter struct {
	decorator generic.StorageDecorator
	uncached  map[schema.GroupResource]bool
	err       error
}

func (g *fixedGetter) GetRESTOptions(r schema.GroupResource, _ runtime.Object) (generic.RESTOptions, error) {
	if g.err != nil {
		return generic.RESTOptions{}, g.err
	}
	if g.uncached[r] {
		return generic.RESTOptions{Decorator: generic.UndecoratedStorage, ResourcePrefix: r.Resource}, nil
	}
	return generic.RESTOptions{Decorator: g.decorator, ResourcePrefix: r.Resource}, nil
}

var (
	pods    = schema.GroupResource{Resource: "pods"}
	events  = schema.GroupResource{Resource: "events"}
	errBoom = errors.New("boom")
)

func TestWrapGetter(t *testing.T) {
	replacement := genericregistry.StorageWithCacher()
	cases := []struct {
		name        string
		inner       fixedGetter
		resource    schema.GroupResource
		wantSwapped bool
		wantErr     error
	}{
		{"cached resource gets the replacement", fixedGetter{decorator: genericregistry.StorageWithCacher()}, pods, true, nil},
		{"resource with cache size 0 stays uncached", fixedGetter{decorator: genericregistry.StorageWithCacher(), uncached: map[schema.GroupResource]bool{events: true}}, events, false, nil},
		{"--watch-cache=false stays uncached", fixedGetter{decorator: generic.UndecoratedStorage}, pods, false, nil},
		{"errors pass through", fixedGetter{err: errBoom}, pods, false, errBoom},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := WrapGetter(&tc.inner, Freshcache, replacement)
			opts, err := g.GetRESTOptions(tc.resource, nil)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			swapped := samePointer(opts.Decorator, replacement)
			if swapped != tc.wantSwapped {
				t.Fatalf("decorator swapped=%v, want %v", swapped, tc.wantSwapped)
			}
			if opts.ResourcePrefix != tc.resource.Resource {
				t.Fatalf("other options were not kept: prefix %q", opts.ResourcePrefix)
			}
		})
	}
}

func TestWrapGetterDoesNotStack(t *testing.T) {
	inner := &fixedGetter{decorator: genericregistry.StorageWithCacher()}
	once := WrapGetter(inner, Upstream, genericregistry.StorageWithCacher())
	twice := WrapGetter(once, Freshcache, genericregistry.StorageWithCacher())
	if twice.(*swappingGetter).inner != generic.RESTOptionsGetter(inner) {
		t.Fatal("wrapping a wrapped getter must replace the first wrapper, not stack on it")
	}
	if WrapGetter(nil, Upstream, nil) != nil {
		t.Fatal("a nil getter must stay nil")
	}
}

func TestIsCaching(t *testing.T) {
	if IsCaching(generic.UndecoratedStorage) || IsCaching(nil) {
		t.Fatal("UndecoratedStorage and nil are not caches")
	}
	if !IsCaching(genericregistry.StorageWithCacher()) {
		t.Fatal("StorageWithCacher is a cache")
	}
}

func TestApplyToWrapsEveryGetter(t *testing.T) {
	inner := &fixedGetter{decorator: genericregistry.StorageWithCacher()}
	cfg := &app.Config{
		KubeAPIs: &controlplane.Config{ControlPlane: controlplaneapiserver.Config{
			Generic: &genericapiserver.Config{RESTOptionsGetter: inner},
		}},
		ApiExtensions: &apiextensionsapiserver.Config{
			GenericConfig: &genericapiserver.RecommendedConfig{Config: genericapiserver.Config{RESTOptionsGetter: inner}},
			ExtraConfig:   apiextensionsapiserver.ExtraConfig{CRDRESTOptionsGetter: inner},
		},
		Aggregator: &aggregatorapiserver.Config{
			GenericConfig: &genericapiserver.RecommendedConfig{Config: genericapiserver.Config{RESTOptionsGetter: inner}},
		},
	}
	if err := (&Options{WatchCacheImplementation: Upstream}).ApplyTo(cfg); err != nil {
		t.Fatal(err)
	}
	for _, slot := range getterSlots(cfg) {
		g, ok := (*slot.getter).(*swappingGetter)
		if !ok {
			t.Errorf("%s getter is %T, want the swapping getter", slot.name, *slot.getter)
			continue
		}
		if g.impl != Upstream {
			t.Errorf("%s getter installs %q", slot.name, g.impl)
		}
	}

	cfg.Aggregator.GenericConfig.RESTOptionsGetter = nil
	if err := (&Options{WatchCacheImplementation: Upstream}).ApplyTo(cfg); err == nil || !strings.Contains(err.Error(), "aggregator") {
		t.Fatalf("a missing getter must be reported by name, got %v", err)
	}
	if err := (&Options{WatchCacheImplementation: Upstream}).ApplyTo(&app.Config{}); err == nil {
		t.Fatal("an empty config must be refused")
	}
}

func samePointer(a, b generic.StorageDecorator) bool {
	return a != nil && b != nil && funcPointer(a) == funcPointer(b)
}
