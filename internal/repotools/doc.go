// Package repotools holds no code: its subpackages are the repository's own
// tooling, run by make and by their repository tests, never by the product
// or the lab. docscheck checks the markdown (links, anchors, section
// citations); figures computes every figure the docs quote from
// docs/results and rewrites or checks it; makehelp checks the Makefile's
// help lines; repotest is what their repository tests share.
package repotools
