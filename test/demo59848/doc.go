// Package demo59848 replays kubernetes#59848 with real kubelets: a
// 3-member etcd whose every peer link passes through a fault proxy
// (test/robustness), kube-apiserver A pinned to member 0 with the
// controller-manager and the scheduler, kube-apiserver B pinned to member 1
// with one kubemark hollow node N. A pod bound to N runs; member 1 is cut
// off from its peers; the pod is deleted through A; N's kubelet restarts
// and lists its pods from B. The test records whether the new kubelet's
// fake runtime started the deleted pod, and which requests it sent B (B's
// audit log), once with each of upstream's cacher, freshcache, and
// freshcache with FreshResourceVersionZero, and each with the hollow
// kubelet's client-go in both modes a real fleet has: WatchListClient on
// (1.35+ kubelets: the first request is a watch-list) and off (1.34 and
// older, which the version-skew policy allows against a 1.37 apiserver:
// a LIST at resourceVersion=0 first), the latter through
// cmd/kubemark-watchlist-off. The closing lines say, per implementation
// and mode, whether the deleted pod started again and in how many trials.
//
// It fails if the FreshResourceVersionZero run ever starts the deleted
// pod, if plain freshcache starts it with a watch-list kubelet (it must
// be no less safe than upstream there), and if upstream with a listing
// kubelet never starts it: a demo that cannot fail on upstream shows
// nothing. The other runs are recorded.
//
// It runs only with FRESHCACHE_DEMO_59848=1 and FRESHCACHE_BIN_DIR (make
// demo-59848; make demo-59848-short, in `make test`, runs the two listing
// runs that discriminate). DEMO_59848_RUN (implementations,
// comma-separated), DEMO_59848_WATCHLIST (on, off or both) and
// DEMO_59848_TRIALS (per configuration, default 1) select runs.
package demo59848
