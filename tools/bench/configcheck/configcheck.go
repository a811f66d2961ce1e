package configcheck

import (
	"errors"
	"fmt"
	"slices"
)

// Problems gathers a configuration's problems. Its methods are not safe
// for concurrent use; a Validate method owns one.
type Problems struct {
	sentinel error
	errs     []error
}

// New returns an empty list whose problems wrap sentinel; with a nil
// sentinel they are the plain messages.
func New(sentinel error) *Problems {
	return &Problems{sentinel: sentinel}
}

// Addf adds one problem, "sentinel: message".
func (p *Problems) Addf(format string, args ...any) {
	if p.sentinel == nil {
		p.errs = append(p.errs, fmt.Errorf(format, args...))
		return
	}
	p.errs = append(p.errs, fmt.Errorf("%w: "+format, append([]any{p.sentinel}, args...)...))
}

// Err joins every problem added so far; nil when there is none.
func (p *Problems) Err() error {
	return errors.Join(p.errs...)
}

// NameRule says which configuration names a run takes and what each
// problem with a list of them says.
type NameRule struct {
	// Known are the names a run takes.
	Known []string
	// Empty is the message (not a format) for an empty list.
	Empty string
	// Unknown is the format for a name not in Known; its one verb takes
	// the name.
	Unknown string
	// Twice is the format for a name listed again; its one verb takes the
	// name. Empty: a name may come twice.
	Twice string
}

// Names checks a list of configuration names against rule.
func (p *Problems) Names(names []string, rule NameRule) {
	if len(names) == 0 {
		p.Addf("%s", rule.Empty)
	}
	seen := map[string]bool{}
	for _, name := range names {
		if !slices.Contains(rule.Known, name) {
			p.Addf(rule.Unknown, name)
		}
		if seen[name] && rule.Twice != "" {
			p.Addf(rule.Twice, name)
		}
		seen[name] = true
	}
}
