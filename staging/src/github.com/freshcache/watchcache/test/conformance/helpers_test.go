package conformance

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/storage"
	storagetesting "k8s.io/apiserver/pkg/storage/testing"
	"k8s.io/apiserver/pkg/storage/value"

	"github.com/freshcache/watchcache"
	"github.com/freshcache/watchcache/internal/testing/cachetest"
)

// createWrapper makes Create return only once the cache serves the object,
// as upstream's cacher tests do for the watch-semantics suites, which assume
// that a created object is immediately part of the cache's state.
type createWrapper struct {
	*watchcache.Cache
}

func (c *createWrapper) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	if err := c.Cache.Create(ctx, key, obj, out, ttl); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		cur := cachetest.NewPod()
		err := c.Get(ctx, key, storage.GetOptions{ResourceVersion: "0"}, cur)
		if storage.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return apiequality.Semantic.DeepEqual(cur, out), nil
	})
}

// swappableTransformer lets a test replace the etcd3 store's transformer
// while the store runs, which RunTestGuaranteedUpdate and
// RunTestListResourceVersionMatch need.
type swappableTransformer struct {
	cur atomic.Pointer[value.Transformer]
}

func (s *swappableTransformer) get() value.Transformer { return *s.cur.Load() }

func (s *swappableTransformer) TransformFromStorage(ctx context.Context, data []byte, dataCtx value.Context) ([]byte, bool, error) {
	return s.get().TransformFromStorage(ctx, data, dataCtx)
}

func (s *swappableTransformer) TransformToStorage(ctx context.Context, data []byte, dataCtx value.Context) ([]byte, error) {
	return s.get().TransformToStorage(ctx, data, dataCtx)
}

type cacheWithPrefixTransformer struct {
	*watchcache.Cache
	tr   *swappableTransformer
	base *storagetesting.PrefixTransformer
}

func (c *cacheWithPrefixTransformer) UpdatePrefixTransformer(modify storagetesting.PrefixTransformerModifier) func() {
	cp := *c.base
	next := modify(&cp)
	prev := c.tr.cur.Swap(&next)
	return func() { c.tr.cur.Store(prev) }
}

func setupWithPrefixTransformer(t *testing.T) (context.Context, *cachetest.Env, *cacheWithPrefixTransformer) {
	base := storagetesting.NewPrefixTransformer([]byte("test!"), false)
	tr := &swappableTransformer{}
	var v value.Transformer = base
	tr.cur.Store(&v)
	ctx, e := setup(t, cachetest.WithTransformer(tr))
	return ctx, e, &cacheWithPrefixTransformer{Cache: e.Cache, tr: tr, base: base}
}
