//go:build invariants

package freshness

// invariantsEnabled turns on checkInvariants after every input.
const invariantsEnabled = true
