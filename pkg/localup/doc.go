// Package localup is the machinery behind cmd/local-up: credentials for a
// local control plane (a CA, serving certs, service-account keys and an admin
// client certificate), kubeconfig files, the split of the command line between
// local-up and kube-apiserver, and the supervision of kube-apiserver child
// processes.
//
// kube-apiserver keeps process-wide state (the metrics registry, feature
// gates), so every instance runs as its own child process. Credentials are
// written once under the data directory and reused on restart, so a
// kubeconfig handed out earlier keeps working.
package localup
