// Package demo59848 replays kubernetes#59848: a 3-member etcd whose
// every peer link passes through a fault proxy (lab/test/robustness),
// kube-apiserver A pinned to member 0 with the controller-manager and the
// scheduler, kube-apiserver B pinned to member 1. Member 1 is cut off from
// its peers, a pod is deleted through A, and a kubelet restarts against B.
// The question is whether the new kubelet starts the deleted pod again.
//
// Two node kinds (DEMO_59848_NODE):
//
//   - real (make demo-59848, root): local-up --real-nodes=1, the upstream
//     kubelet on containerd, in the form of kubernetes#59848's title. A
//     StatefulSet's web-0 runs on the real node R (kubelet on A); R is
//     cordoned, member 1 cut off, web-0 deleted through A; R's kubelet
//     kills it and the StatefulSet controller re-creates web-0 on a hollow
//     node H. R's kubelet restarts against B. "Started again" is
//     containerd's own record, over CRI: a container of the old web-0 (its
//     UID) created after the restart. Then two copies of web-0 run at once.
//   - hollow (the default of the test, make demo-59848-short): one
//     kubemark hollow node N on B throughout; its restart empties the fake
//     runtime, and "started again" is that runtime running the deleted pod.
//
// Each runs once with each of upstream's cacher, freshcache with its
// default gates (rv=0 fresh), and freshcache with FreshResourceVersionZero
// turned off (freshcache-rv0-off: rv=0 keeps upstream's meaning), and each
// with the kubelet's client-go in
// both modes a real fleet has: WatchListClient on (1.35+ kubelets: the
// first request is a watch-list) and off (1.34 and older, which the
// version-skew policy allows against a 1.37 apiserver: a LIST at
// resourceVersion=0 first). Off is --feature-gates=WatchListClient=false
// for the real kubelet (local-up --real-node-feature-gates) and
// lab/cmd/kubemark-watchlist-off for the hollow one. B's audit log gives the
// restarted kubelet's requests. The closing lines say, per implementation
// and mode, whether the deleted pod started again and in how many trials;
// DEMO_59848_REPORT names a markdown report of the whole run.
//
// It fails if freshcache with its default gates ever starts the deleted
// pod, if freshcache-rv0-off starts it with a watch-list kubelet (it must
// be no less safe than upstream there), and if upstream with a listing
// kubelet never starts it: a demo that cannot fail on upstream shows
// nothing. The other runs are recorded.
//
// It runs only with FRESHCACHE_DEMO_59848=1 and FRESHCACHE_BIN_DIR.
// DEMO_59848_RUN (implementations, comma-separated), DEMO_59848_WATCHLIST
// (on, off or both) and DEMO_59848_TRIALS (per configuration, default 1)
// select runs.
package demo59848
