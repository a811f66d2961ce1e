// Command kube-apiserver is the upstream Kubernetes API server (v1.37) with
// two additions: --watch-cache-implementation chooses the watch cache that
// serves cached resources, and --extra-bind-address serves on further
// addresses beside --bind-address (local-up's real nodes). Everything else
// (flags, admission, authn/z, OpenAPI) is upstream's.
package main

import (
	"os"

	"k8s.io/component-base/cli"

	"github.com/freshcache/freshcache/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewCommand()))
}
