//go:build !invariants

package freshness

const invariantsEnabled = false
