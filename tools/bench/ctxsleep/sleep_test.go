package ctxsleep

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSleepEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, 1<<62); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep on a cancelled context = %v, want context.Canceled", err)
	}
}

func TestSleepReturnsNilAfterTheDuration(t *testing.T) {
	if err := Sleep(context.Background(), 0); err != nil {
		t.Fatalf("Sleep(0) = %v, want nil", err)
	}
}

func TestPoll(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name      string
		ctx       context.Context
		every     time.Duration
		trueAfter int // calls of done before it reports true; -1 never
		want      error
		wantCalls int
	}{
		{"true at once", context.Background(), time.Hour, 0, nil, 1},
		{"true at the third check", context.Background(), time.Millisecond, 2, nil, 3},
		{"true at once on an ended context", cancelled, time.Hour, 0, nil, 1},
		{"never true, the context ends", cancelled, time.Hour, -1, context.Canceled, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			err := Poll(tc.ctx, tc.every, func() bool {
				calls++
				return tc.trueAfter >= 0 && calls > tc.trueAfter
			})
			if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) || calls != tc.wantCalls {
				t.Fatalf("Poll = %v after %d calls, want %v after %d", err, calls, tc.want, tc.wantCalls)
			}
		})
	}
}
