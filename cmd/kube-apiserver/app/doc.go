// Package app builds the kube-apiserver command: upstream's option set and
// server chain (k8s.io/kubernetes/cmd/kube-apiserver/app), plus the flags of
// pkg/apiserver, which install the chosen watch cache into the config between
// app.NewConfig and Config.Complete, and --extra-bind-address (listen.go),
// which serves on further addresses beside --bind-address: local-up's real
// node reaches the apiserver on the node's IP.
package app
