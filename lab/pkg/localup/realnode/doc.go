// Package realnode runs a real Kubernetes node beside local-up's control
// plane (local-up --real-nodes=1): containerd with runc and the CNI bridge
// plugin, the upstream kubelet, whose pods are real processes with real
// logs and exec, and optionally kube-proxy in iptables mode (kubeproxy.go),
// so Services work. Package localup calls it; everything is behind that
// flag, and hollow (kubemark) nodes stay local-up's default.
//
// # What the caller does
//
//  1. Prepare, before the control plane starts: it needs root (the error
//     names the command to run instead), undoes what a run that did not
//     stop cleanly left behind (the undo journal, below), installs the
//     Debian packages it needs when they are missing (containerd, runc,
//     containernetworking-plugins, busybox-static, iptables), checks
//     cgroups, the node IP, the pod network, the bridge name and the
//     kubelet's ports, and builds the images once (images.go). It changes
//     nothing on the host but the packages, so a failed check leaves
//     nothing to clean up.
//  2. AddNodeIP, before the apiserver starts if it is to serve on the node
//     IP (package localup's first apiserver does, for the kubernetes
//     Service): it writes the undo journal and adds the node IP to lo.
//  3. Start, once the apiserver serves: it adds the node IP to lo unless
//     AddNodeIP did, writes the configuration under Options.Dir, starts
//     containerd, the kubelet and kube-proxy through Options.Start (the
//     caller supervises them: any of them exiting ends the run) and waits
//     for their /healthz. The caller then waits for the Node object to be
//     Ready.
//  4. Stop, always, also after a failed AddNodeIP or Start: it stops
//     kube-proxy and the kubelet, removes every pod sandbox over CRI (the
//     CNI plugins release what they set up), stops containerd and undoes
//     every host change.
//
// # What is changed on the host, and how it is put back
//
// Every path of containerd (root, state, sockets, runc state, network
// namespaces), of the CNI plugins (configuration, address allocations)
// and of the kubelet (root directory, pod logs) is under Options.Dir. What
// cannot be there is recorded in <Dir>/state.json (State) before it
// changes: the node IP on lo, the CNI bridge, the sysctls the kubelet, the
// bridge plugin and kube-proxy set (their values before), iptables-save
// output before (undone as a difference, so other chains' rules stay),
// the kubelet's cgroups, and system directories that did not exist. Stop
// undoes all of it and removes the file; a start after a crash finds the
// file and undoes it first. Undoing an entry whose change never happened
// does nothing, so recording ahead of the change is always safe.
//
// # Images
//
// No registry is reachable, so pulls fail at once; the pods use images
// that are already imported: registry.k8s.io/pause:3.10.2 (lab/cmd/freshcache-pause,
// statically linked) and registry.k8s.io/e2e-test-images/busybox:1.37.0-2
// (Debian's static busybox and its applet links), written as docker-save
// tarballs by package imagetar and imported with ctr.
package realnode
