// Package kwok keeps the requirements of kwok's controller (sigs.k8s.io/kwok,
// the node and pod simulator the Kubernetes scalability community uses) in
// a module of its own. kwok v0.8.0 builds against the k8s.io libraries of
// v0.36, the root module against v1.37.2's; a nested module lets each keep
// its own. The kwok command is a tool of this module (go.mod's tool block),
// built unchanged from the module sources; make build-kwok builds it into
// _output/bin.
package kwok
