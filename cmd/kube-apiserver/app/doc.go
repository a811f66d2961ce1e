// Package app builds the kube-apiserver command: upstream's option set and
// server chain (k8s.io/kubernetes/cmd/kube-apiserver/app), plus the flags of
// pkg/apiserver, which install the chosen watch cache into the config between
// app.NewConfig and Config.Complete. Nothing else is added: serving,
// admission and authentication are upstream's flags and code.
package app
