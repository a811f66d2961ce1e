package counterload

import (
	"errors"
	"testing"
	"time"
)

// at is a point on a test's clock, in seconds.
func at(s float64) time.Time {
	return time.Unix(1000, 0).Add(time.Duration(s * float64(time.Second)))
}

func TestNewestBefore(t *testing.T) {
	writes := []Write{{Value: 0, Done: at(1)}, {Value: 1, Done: at(2)}, {Value: 3, Done: at(3)}}
	for _, tc := range []struct {
		t    float64
		want int64
	}{
		{0.5, -1},
		{1, -1}, // completed at the same instant: not before
		{1.5, 0},
		{2.5, 1},
		{9, 3},
	} {
		if got := NewestBefore(writes, at(tc.t)); got != tc.want {
			t.Errorf("NewestBefore(%v) = %d, want %d", tc.t, got, tc.want)
		}
	}
}

func TestCounterValue(t *testing.T) {
	for _, tc := range []struct {
		name string
		kind Kind
		body string
		want int64
		err  error
	}{
		{"get", GetZero, `{"metadata":{"name":"counter"},"data":{"n":"42"}}`, 42, nil},
		{"list", ListConsistent, `{"items":[{"metadata":{"name":"churn-1"},"data":{"n":"1"}},{"metadata":{"name":"counter"},"data":{"n":"7"}}]}`, 7, nil},
		{"list without the counter", ListZero, `{"items":[{"metadata":{"name":"churn-1"},"data":{"n":"1"}}]}`, -1, ErrNoCounter},
		{"get without data", GetConsistent, `{"metadata":{"name":"counter"}}`, -1, ErrNoCounter},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := counterValue(tc.kind, []byte(tc.body))
			if got != tc.want || !errors.Is(err, tc.err) {
				t.Errorf("counterValue = %d, %v; want %d, %v", got, err, tc.want, tc.err)
			}
		})
	}
	if _, err := counterValue(GetZero, []byte(`{"data":{"n":"x"}}`)); err == nil {
		t.Errorf("a value that is no integer must fail")
	}
}
