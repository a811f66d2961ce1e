// Package errtest holds the one check that the lab's table tests of
// validators and parsers make in every row: no error where the row wants
// none, and otherwise an error whose text names what was wrong.
//
// # Who calls it
//
// Tests only (it imports testing): localup's option and binary checks,
// realnode's and kwoknode's option checks, realnode's state loading.
//
// # What it guarantees
//
// Each function fails the test with t.Fatalf, naming the call and what it
// returned, and leaves it running when the error fits; want "" always
// means "no error at all". Matching is strings.Contains on Error().
package errtest
