// Package kindcluster brings up and tears down the project's kind
// clusters from Go, for the tests that run on them: hack/kind-up.sh
// (offline images from make kind-images) with the caller's flags, the
// cluster's kubeconfig, images loaded into its nodes, commands run inside
// a node's container, and a node's address on kind's Docker network.
//
// hack/kind-up.sh stays the one way a cluster is made, so that a test's
// cluster is the one docs/kind.md describes.
package kindcluster
