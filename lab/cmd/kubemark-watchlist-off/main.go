// Command kubemark-watchlist-off is upstream's kubemark (k8s.io/kubernetes
// v1.37.2, cmd/kubemark, unchanged) with client-go's WatchListClient
// feature off: its hollow kubelet lists its pods (LIST at
// resourceVersion=0, then WATCH) instead of opening a watch-list, as
// kubelets of 1.34 and older do, and as a 1.35+ kubelet does once its
// watch-list fails. The version-skew policy lets such kubelets run against
// a 1.37 apiserver, so a fleet mid-upgrade has both kinds.
//
// Kube binaries wire client-go's feature gates to their own
// --feature-gates flag (k8s.io/kubernetes/pkg/features), so client-go's
// KUBE_FEATURE_WatchListClient environment variable does not reach them,
// and kubemark has no --feature-gates flag. This wrapper sets the gate
// before kubemark's command runs; every flag is kubemark's.
package main

import (
	"fmt"
	"os"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kubemark/app"
)

func main() {
	if err := utilfeature.DefaultMutableFeatureGate.Set("WatchListClient=false"); err != nil {
		fmt.Fprintln(os.Stderr, "kubemark-watchlist-off:", err)
		os.Exit(1)
	}
	os.Exit(cli.Run(app.NewHollowNodeCommand()))
}
