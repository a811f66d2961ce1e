package ctxsleep

import (
	"context"
	"time"
)

// Sleep waits d or until ctx ends, and returns ctx.Err() in the latter case.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Poll calls done at once and then every d until it reports true, and
// returns nil; it returns ctx.Err() if ctx ends first. It leaves no ticker
// running behind it.
func Poll(ctx context.Context, d time.Duration, done func() bool) error {
	t := time.NewTicker(d)
	defer t.Stop()
	for !done() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}
