// Package kindlb lets Debian's haproxy serve as kind's load balancer for a
// cluster of several control planes, where kind's own image
// (docker.io/envoyproxy/envoy, C++) cannot be pulled or built: the offline
// machines of this project have no registry, and Debian has no envoy.
//
// kind v0.33 starts its load-balancer container with a bash loop that runs
// `envoy -c /home/envoy/envoy.yaml`, a bootstrap file naming two files of
// dynamic configuration (file-based xDS): a listener (LDS) and a cluster
// of the control planes' apiservers (CDS). kind writes both when the
// control planes exist, and again when they change, by renaming new files
// into place. cmd/kind-lb, installed as `envoy` in the offline
// load-balancer image (hack/kind-images.sh), reads those files instead of
// envoy and runs haproxy with the same meaning: a TCP proxy on the
// listener's port, round robin over the endpoints, each checked with an
// HTTPS GET of /healthz that accepts any certificate, as kind asks of
// envoy.
//
// # Who calls it
//
// cmd/kind-lb: Bootstrap finds the two paths, Supervisor.Run renders
// (Parse, Render) and runs haproxy, reloading it whenever a file changes.
// Nothing here is used by the product or by kind on a machine that can
// pull envoy's image: hack/kind-up.sh swaps the image only offline.
//
// # Guarantees
//
//   - Only what kind's templates set is read: the listener's address and
//     port; the cluster's endpoints, connect timeout and health check
//     (path, interval, timeout, thresholds). Anything else in the files
//     is ignored, and a file that is not YAML, or a listener without a
//     port, is an error that leaves the running haproxy as it was.
//   - An empty configuration (kind's `resources: []` before the control
//     planes exist) runs haproxy with no listener on the apiserver port.
//   - A new configuration is checked with `haproxy -c` before the running
//     haproxy is asked to reload it (SIGUSR2 to its master process).
package kindlb
