package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	examplev1 "k8s.io/apiserver/pkg/apis/example/v1"
	"k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/etcd3"
	storagetesting "k8s.io/apiserver/pkg/storage/testing"
	"k8s.io/apiserver/pkg/storage/value"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"

	freshfeatures "github.com/freshcache/watchcache/features"
	"github.com/freshcache/watchcache/internal/testing/cachetest"
)

func noKeyCheck(context.Context, *testing.T, string) {}

func noCallsCheck(*testing.T, uint64, uint64) {}

func setup(t *testing.T, opts ...cachetest.Option) (context.Context, *cachetest.Env) {
	t.Helper()
	return context.Background(), cachetest.Start(t, opts...)
}

func TestCreate(t *testing.T) {
	ctx, e := setup(t)
	storagetesting.RunTestCreate(ctx, t, e.Cache, noKeyCheck)
}

func TestCreateWithTTL(t *testing.T) {
	ctx, e := setup(t)
	storagetesting.RunTestCreateWithTTL(ctx, t, e.Cache)
}

func TestCreateWithKeyExist(t *testing.T) {
	ctx, e := setup(t)
	storagetesting.RunTestCreateWithKeyExist(ctx, t, e.Cache)
}

func TestGet(t *testing.T) {
	ctx, e := setup(t)
	storagetesting.RunTestGet(ctx, t, e.Cache)
}

func TestUnconditionalDelete(t *testing.T) {
	ctx, e := setup(t)
	storagetesting.RunTestUnconditionalDelete(ctx, t, e.Cache)
}

func TestConditionalDelete(t *testing.T) {
	ctx, e := setup(t)
	storagetesting.RunTestConditionalDelete(ctx, t, e.Cache)
}

func TestDeleteWithSuggestion(t *testing.T) {
	ctx, e := setup(t)
	storagetesting.RunTestDeleteWithSuggestion(ctx, t, e.Cache)
}

func TestDeleteWithSuggestionAndConflict(t *testing.T) {
	ctx, e := setup(t)
	storagetesting.RunTestDeleteWithSuggestionAndConflict(ctx, t, e.Cache)
}

func TestDeleteWithSuggestionOfDeletedObject(t *testing.T) {
	ctx, e := setup(t)
	storagetesting.RunTestDeleteWithSuggestionOfDeletedObject(ctx, t, e.Cache)
}

func TestValidateDeletionWithSuggestion(t *testing.T) {
	ctx, e := setup(t)
	storagetesting.RunTestValidateDeletionWithSuggestion(ctx, t, e.Cache)
}

func TestValidateDeletionWithOnlySuggestionValid(t *testing.T) {
	ctx, e := setup(t)
	storagetesting.RunTestValidateDeletionWithOnlySuggestionValid(ctx, t, e.Cache)
}

func TestDeleteWithConflict(t *testing.T) {
	ctx, e := setup(t)
	storagetesting.RunTestDeleteWithConflict(ctx, t, e.Cache)
}

// failingTransformer fails reads on demand, to store undecryptable data.
type failingTransformer struct {
	value.Transformer
	fail atomic.Bool
}

func (f *failingTransformer) TransformFromStorage(ctx context.Context, data []byte, dataCtx value.Context) ([]byte, bool, error) {
	if f.fail.Load() {
		return nil, false, errors.New("synthetic transform error")
	}
	return f.Transformer.TransformFromStorage(ctx, data, dataCtx)
}

// failingCodec fails decodes on demand, to store undecodable data.
type failingCodec struct {
	runtime.Codec
	fail atomic.Bool
}

func (f *failingCodec) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if f.fail.Load() {
		return nil, nil, errors.New("synthetic decode error")
	}
	return f.Codec.Decode(data, defaults, into)
}

func TestDeleteWithConflictAndMissingExpectedTransformOrDecodeError(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.AllowUnsafeMalformedObjectDeletion, true)
	tr := &failingTransformer{Transformer: identity.NewEncryptCheckTransformer()}
	ctx, e := setup(t, cachetest.WithTransformer(tr))
	storagetesting.RunTestDeleteWithConflictAndMissingExpectedTransformOrDecodeError(ctx, t, e.Cache, tr.fail.Store)
}

func TestDeleteWithConflictAndExpectedTransformError(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.AllowUnsafeMalformedObjectDeletion, true)
	tr := &failingTransformer{Transformer: identity.NewEncryptCheckTransformer()}
	ctx, e := setup(t, cachetest.WithTransformer(tr))
	storagetesting.RunTestDeleteExpectedTransformOrDecodeError(ctx, t, e.Cache, tr.fail.Store)
}

func TestDeleteWithConflictAndExpectedDecodeError(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.AllowUnsafeMalformedObjectDeletion, true)
	etcd3.TestOnlySetFatalOnDecodeError(t, false)
	codec := &failingCodec{Codec: apitesting.TestCodec(cachetest.Codecs, examplev1.SchemeGroupVersion)}
	ctx, e := setup(t, cachetest.WithCodec(codec))
	storagetesting.RunTestDeleteExpectedTransformOrDecodeError(ctx, t, e.Cache, codec.fail.Store)
}

func TestDeleteWithSuggestionAndMissingExpectedTransformOrDecodeError(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.AllowUnsafeMalformedObjectDeletion, true)
	ctx, e := setup(t)
	storagetesting.RunTestDeleteWithSuggestionAndMissingExpectedTransformOrDecodeError(ctx, t, e.Cache)
}

func TestPreconditionalDeleteWithSuggestion(t *testing.T) {
	ctx, e := setup(t)
	storagetesting.RunTestPreconditionalDeleteWithSuggestion(ctx, t, e.Cache)
}

func TestPreconditionalDeleteWithSuggestionPass(t *testing.T) {
	ctx, e := setup(t)
	storagetesting.RunTestPreconditionalDeleteWithOnlySuggestionPass(ctx, t, e.Cache)
}

func TestListPaging(t *testing.T) {
	ctx, e := setup(t)
	storagetesting.RunTestListPaging(ctx, t, e.Cache)
}

// consistentReadsFromCache: the freshness protocol serves LIST rv="" from
// the cache (gate ConsistentReadsFromCache, on by default), so RunTestList
// runs with the cacher's etcd-request expectations and
// RunTestConsistentList with consistentReadsSupported=true.
const consistentReadsFromCache = true

func TestLists(t *testing.T) {
	for _, snapshots := range []bool{true, false} {
		t.Run(fmt.Sprintf("ListFromCacheSnapshot=%v", snapshots), func(t *testing.T) {
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.ListFromCacheSnapshot, snapshots)
			t.Run("List", func(t *testing.T) {
				ctx, e := setup(t)
				storagetesting.RunTestList(ctx, t, e.Cache, e.Compact, true, e.Recorder)
			})
			t.Run("ConsistentList", func(t *testing.T) {
				// Its first case asserts that an rv=0 LIST may be older
				// than the last write (upstream's "any state"), at most
				// that write's revision; fresh rv=0 (on by default) is
				// newer by design and has tests of its own
				// (TestFreshResourceVersionZero). Upstream's meaning here.
				featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, freshfeatures.FreshResourceVersionZero, false)
				ctx, e := setup(t)
				storagetesting.RunTestConsistentList(ctx, t, e.Cache, e.IncreaseRV, true, consistentReadsFromCache, snapshots)
			})
			t.Run("GetListNonRecursive", func(t *testing.T) {
				ctx, e := setup(t)
				storagetesting.RunTestGetListNonRecursive(ctx, t, e.IncreaseRV, e.Cache)
			})
		})
	}
}

// RunTestList runs with watchCacheEnabled=true only (TestLists), as
// upstream runs it against its cacher. With false it would add just the
// two cases that expect etcd's pages for a limit at rv=0, which a watch
// cache ignores (kubernetes#108003; TestListAtRVZeroIgnoresLimit).

func TestCompactRevision(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.ListFromCacheSnapshot, true)
	ctx, e := setup(t)
	storagetesting.RunTestCompactRevision(ctx, t, e.Cache, e.IncreaseRV, e.Compact)
}

func TestGetListRecursivePrefix(t *testing.T) {
	ctx, e := setup(t)
	storagetesting.RunTestGetListRecursivePrefix(ctx, t, e.Cache)
}

func TestListContinuation(t *testing.T) {
	ctx, e := setup(t)
	storagetesting.RunTestListContinuation(ctx, t, e.Cache, noCallsCheck)
}

func TestListPaginationRareObject(t *testing.T) {
	ctx, e := setup(t)
	storagetesting.RunTestListPaginationRareObject(ctx, t, e.Cache, noCallsCheck)
}

func TestListContinuationWithFilter(t *testing.T) {
	ctx, e := setup(t)
	storagetesting.RunTestListContinuationWithFilter(ctx, t, e.Cache, noCallsCheck)
}

func TestListResourceVersionMatch(t *testing.T) {
	ctx, _, s := setupWithPrefixTransformer(t)
	storagetesting.RunTestListResourceVersionMatch(ctx, t, s)
}

func TestNamespaceScopedList(t *testing.T) {
	ctx, e := setup(t, cachetest.NodeNameAndNamespaceIndex)
	storagetesting.RunTestNamespaceScopedList(ctx, t, e.Cache)
}

func TestGuaranteedUpdate(t *testing.T) {
	ctx, _, s := setupWithPrefixTransformer(t)
	storagetesting.RunTestGuaranteedUpdate(ctx, t, s, noKeyCheck)
}

func TestGuaranteedUpdateWithTTL(t *testing.T) {
	ctx, e := setup(t)
	storagetesting.RunTestGuaranteedUpdateWithTTL(ctx, t, e.Cache)
}

func TestGuaranteedUpdateWithConflict(t *testing.T) {
	ctx, e := setup(t)
	storagetesting.RunTestGuaranteedUpdateWithConflict(ctx, t, e.Cache)
}

func TestGuaranteedUpdateWithSuggestionAndConflict(t *testing.T) {
	ctx, e := setup(t)
	storagetesting.RunTestGuaranteedUpdateWithSuggestionAndConflict(ctx, t, e.Cache)
}

func TestStats(t *testing.T) {
	for _, sizeBased := range []bool{true, false} {
		t.Run(fmt.Sprintf("SizeBasedListCostEstimate=%v", sizeBased), func(t *testing.T) {
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.SizeBasedListCostEstimate, sizeBased)
			ctx, e := setup(t)
			storagetesting.RunTestStats(ctx, t, e.Cache, cachetest.ProtoCodec, identity.NewEncryptCheckTransformer(), sizeBased)
		})
	}
}

// TestKeySchema stores objects at keys that are not their KeyFunc keys (an
// object without a name at "/pods/", "/pods/namespace", ...), which no
// apiserver does, and reads them back with rv="". The cache indexes
// objects by KeyFunc, as upstream's does, so it cannot hold them where
// etcd does; it remembers such keys when they are written through it and
// answers reads of them from etcd. It runs with the library's defaults.
func TestKeySchema(t *testing.T) {
	ctx, e := setup(t)
	storagetesting.RunTestKeySchema(ctx, t, e.Cache)
}

func TestWatch(t *testing.T) {
	// cache adapts upstream's tests that take only the store.
	cache := func(run func(context.Context, *testing.T, storage.Interface)) func(context.Context, *testing.T, *cachetest.Env) {
		return func(ctx context.Context, t *testing.T, e *cachetest.Env) { run(ctx, t, e.Cache) }
	}
	// created adapts upstream's tests that create through the store
	// (createWrapper), with their own context.
	created := func(run func(context.Context, *testing.T, storage.Interface)) func(context.Context, *testing.T, *cachetest.Env) {
		return func(_ context.Context, t *testing.T, e *cachetest.Env) {
			run(context.TODO(), t, &createWrapper{e.Cache})
		}
	}
	for _, tc := range []struct {
		name string
		opts []cachetest.Option
		run  func(context.Context, *testing.T, *cachetest.Env)
	}{
		{"Watch", nil, cache(storagetesting.RunTestWatch)},
		{"WatchFromZero", nil, func(ctx context.Context, t *testing.T, e *cachetest.Env) {
			storagetesting.RunTestWatchFromZero(ctx, t, e.Cache, e.Compact)
		}},
		{"DeleteTriggerWatch", nil, cache(storagetesting.RunTestDeleteTriggerWatch)},
		{"WatchFromNonZero", nil, cache(storagetesting.RunTestWatchFromNonZero)},
		{"DelayedWatchDelivery", nil, cache(storagetesting.RunTestDelayedWatchDelivery)},
		{"WatchContextCancel", nil, cache(storagetesting.RunTestWatchContextCancel)},
		{"WatcherTimeout", nil, cache(storagetesting.RunTestWatcherTimeout)},
		{"WatchDeleteEventObjectHaveLatestRV", nil, cache(storagetesting.RunTestWatchDeleteEventObjectHaveLatestRV)},
		{"WatchInitializationSignal", nil, cache(storagetesting.RunTestWatchInitializationSignal)},
		{"ClusterScopedWatch", []cachetest.Option{cachetest.ClusterScoped, cachetest.NodeNameAndNamespaceIndex}, cache(storagetesting.RunTestClusterScopedWatch)},
		{"NamespaceScopedWatch", []cachetest.Option{cachetest.NodeNameAndNamespaceIndex}, cache(storagetesting.RunTestNamespaceScopedWatch)},
		{"WatchDispatchBookmarkEvents", nil, func(ctx context.Context, t *testing.T, e *cachetest.Env) {
			storagetesting.RunTestWatchDispatchBookmarkEvents(ctx, t, e.Cache, true)
		}},
		{"WatchBookmarksWithCorrectResourceVersion", nil, cache(storagetesting.RunTestOptionalWatchBookmarksWithCorrectResourceVersion)},
		{"SendInitialEventsBackwardCompatibility", nil, cache(storagetesting.RunSendInitialEventsBackwardCompatibility)},
		{"WatchSemantics", nil, created(storagetesting.RunWatchSemantics)},
		{"WatchSemanticInitialEventsExtended", nil, created(storagetesting.RunWatchSemanticInitialEventsExtended)},
		{"WatchListMatchSingle", nil, created(storagetesting.RunWatchListMatchSingle)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, e := setup(t, tc.opts...)
			tc.run(ctx, t, e)
		})
	}
}

var _ storage.Interface = (*createWrapper)(nil)
