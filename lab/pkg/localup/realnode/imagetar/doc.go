// Package imagetar writes container images as docker-save tarballs (the
// "docker image archive" format: manifest.json, an image config and one
// uncompressed layer), the format that `ctr images import` reads. local-up
// builds the images its real nodes run (the pause sandbox image, busybox)
// from files on this machine, because no registry is reachable.
//
// # Guarantees
//
// Write is deterministic: the same Image gives byte-identical output (files
// sorted by path, parent directories added, every timestamp Image.Created,
// owner root), so the image ID (the config's digest) only changes when the
// content does, and containerd reimports nothing on a restart. Nothing is
// compressed: the layer's digest is its diff ID.
//
// # Who calls it
//
// Package realnode (images.go) and its tests. It does no I/O besides the
// writer it is given.
package imagetar
