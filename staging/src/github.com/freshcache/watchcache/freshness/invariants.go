package freshness

import (
	"errors"
	"fmt"
)

// checkInvariants panics if the Machine's state is inconsistent. It costs
// O(reads) per input, so it runs only in builds with the invariants tag
// (go test -tags invariants); see invariants_on.go.
func (m *Machine) checkInvariants() {
	if !invariantsEnabled {
		return
	}
	if err := m.verify(); err != nil {
		panic(err)
	}
}

// verify checks the Machine's internal consistency. Tests call it directly.
func (m *Machine) verify() error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	var pending, covered, waiting, withDeadline int
	for id, r := range m.reads {
		if r.ID != id {
			fail("read %d stored under ID %d", r.ID, id)
		}
		switch r.stage {
		case stagePending:
			pending++
			if r.Kind != Consistent {
				fail("read %d: %v read pending a fetch", id, r.Kind)
			}
		case stageCovered:
			covered++
			if !m.fetchInFlight || r.fetch != m.lastFetch {
				fail("read %d covered by fetch %d, in flight %v/%d", id, r.fetch, m.fetchInFlight, m.lastFetch)
			}
		case stageWaiting:
			waiting++
			if r.targetIdx < 0 || r.targetIdx >= len(m.waiting) || m.waiting[r.targetIdx] != r {
				fail("read %d waiting but not in the target heap", id)
			}
			// The core promptness rule: nobody waits for a revision the
			// cache has reached.
			if r.target <= m.rev {
				fail("read %d waits for %d but c=%d", id, r.target, m.rev)
			}
		default:
			fail("read %d unresolved with stage %d", id, r.stage)
		}
		if r.CatchUp > 0 && (r.stage == stageWaiting) == r.Deadline.IsZero() {
			// A patient read has a deadline exactly once its revision is
			// known: none while it waits for a fetch, at+CatchUp after.
			fail("patient read %d in stage %d with deadline %v", id, r.stage, r.Deadline)
		}
		if !r.Deadline.IsZero() {
			withDeadline++
			if r.deadlineIdx < 0 || r.deadlineIdx >= len(m.deadlines) || m.deadlines[r.deadlineIdx] != r {
				fail("read %d has a deadline but is not in the deadline heap", id)
			}
		}
	}
	if pending != m.nPending {
		fail("nPending=%d, counted %d", m.nPending, pending)
	}
	if covered != m.nCovered {
		fail("nCovered=%d, counted %d", m.nCovered, covered)
	}
	if waiting != len(m.waiting) {
		fail("target heap has %d reads, counted %d", len(m.waiting), waiting)
	}
	if withDeadline != len(m.deadlines) {
		fail("deadline heap has %d reads, counted %d", len(m.deadlines), withDeadline)
	}
	if !m.fetchInFlight && m.nCovered != 0 {
		fail("%d reads covered but no fetch in flight", m.nCovered)
	}
	for i := 1; i < len(m.waiting); i++ {
		if m.waiting[i].target < m.waiting[(i-1)/2].target {
			fail("target heap order broken at %d", i)
		}
	}
	for i := 1; i < len(m.deadlines); i++ {
		if m.deadlines[i].Deadline.Before(m.deadlines[(i-1)/2].Deadline) {
			fail("deadline heap order broken at %d", i)
		}
	}
	return errors.Join(errs...)
}
