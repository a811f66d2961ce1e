// Package counterload is the traffic that shows stale reads through real
// kube-apiservers: one writer increments a counter ConfigMap (and now and
// then creates and deletes another object, so that LISTs carry a changing
// set), and readers GET and LIST it at resourceVersion "" and "0", one
// request at a time, recording each answer exactly as the server sent it.
//
// A read is stale when its counter is older than the newest write that
// completed before the read began (NewestBefore); what a read is promised
// is its caller's to say. The fault-heal run (package robustness) and the
// rolling upgrade on kind (package kindupgrade) drive it, each with its own
// schedule of faults or restarts.
package counterload
