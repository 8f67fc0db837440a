package bashtool

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

func TestJSNumber(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   float64
		want string
	}{
		{name: "zero", in: 0, want: "0"},
		{name: "negative zero", in: math.Copysign(0, -1), want: "0"},
		{name: "integer", in: -5, want: "-5"},
		{name: "fraction", in: 1.5, want: "1.5"},
		{name: "shortest round trip", in: 0.30000000000000004, want: "0.30000000000000004"},
		{name: "large plain", in: 123456789012345680000, want: "123456789012345680000"},
		{name: "exponent from 1e21", in: 1e21, want: "1e+21"},
		{name: "negative large exponent", in: -2.5e300, want: "-2.5e+300"},
		{name: "small plain", in: 0.000001, want: "0.000001"},
		{name: "small exponent", in: 1.5e-7, want: "1.5e-7"},
		{name: "tiny exponent", in: 5e-324, want: "5e-324"},
		{name: "infinity", in: math.Inf(1), want: "Infinity"},
		{name: "negative infinity", in: math.Inf(-1), want: "-Infinity"},
		{name: "nan", in: math.NaN(), want: "NaN"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := jsNumber(tc.in); got != tc.want {
				t.Errorf("jsNumber(%v) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestMillis(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   float64
		want time.Duration
	}{
		{name: "whole", in: 100, want: 100 * time.Millisecond},
		{name: "fraction up", in: 100.1, want: 101 * time.Millisecond},
		{name: "below one", in: 1e-9, want: time.Millisecond},
		{name: "saturates", in: 1e300, want: time.Duration(math.MaxInt64)},
		{name: "infinity saturates", in: math.Inf(1), want: time.Duration(math.MaxInt64)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := millis(tc.in); got != tc.want {
				t.Errorf("millis(%v) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

// FuzzArguments: whatever the model sends, parsing and presentation never
// panic, and a call that validates has a non-blank command and description.
func FuzzArguments(f *testing.F) {
	for _, seed := range []string{
		``, `{}`, `null`, `[]`, `{"command":"ls","description":"d"}`, `{"command":"ls","description":"d","timeoutMs":-1e999}`,
		`{"command":"\u0000","description":"\ud800"}`, `{"task_id":"bash-1"}`, `{"command":1e999}`, `{"timeoutMs":1e-400}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		a, err := parseBashArgs(json.RawMessage(raw))
		if err == nil && (a.Command == "" || a.Description == "" || a.Timeout < 0) {
			t.Errorf("accepted %q as %+v", raw, a)
		}
		_, _ = parseTaskID(json.RawMessage(raw))
		_ = describeTaskID(json.RawMessage(raw))
		cmd, _, _ := object{"command": raw}.str("command")
		_, _ = commandTitle(cmd)
	})
}
