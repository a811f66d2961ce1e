// Command kube-apiserver is the upstream Kubernetes API server (v1.37) with
// one addition: --watch-cache-implementation chooses the watch cache that
// serves cached resources, with the consistent-read flags that go with it.
// Everything else (flags, admission, authn/z, OpenAPI) is upstream's.
package main

import (
	"os"

	"k8s.io/component-base/cli"

	"github.com/freshcache/freshcache/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewCommand()))
}
