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
