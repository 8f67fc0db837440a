package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
)

// ArgError is an argument problem; its message is what the model reads
// after "Error: ".
type ArgError string

func (e ArgError) Error() string { return string(e) }

// Args are a call's arguments, decoded at the top level, for the tools
// whose argument errors are not pinned by the seed (bashtool keeps its own).
type Args map[string]json.RawMessage

// ParseArgs decodes raw arguments; empty ones count as {} so that the
// model hears which property is missing. Unknown keys are ignored.
func ParseArgs(raw json.RawMessage) (Args, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return Args{}, nil
	}
	var obj Args
	if raw[0] != '{' || json.Unmarshal(raw, &obj) != nil {
		return nil, ArgError("invalid arguments: expected a JSON object")
	}
	if obj == nil {
		obj = Args{}
	}
	return obj, nil
}

// Lookup returns a property; null counts as absent.
func (o Args) Lookup(key string) (json.RawMessage, bool) {
	v, ok := o[key]
	if !ok || string(bytes.TrimSpace(v)) == "null" {
		return nil, false
	}
	return v, true
}

// String reads a string property; required ones must be present.
func (o Args) String(key string, required bool) (string, error) {
	v, ok := o.Lookup(key)
	if !ok {
		if required {
			return "", ArgError(fmt.Sprintf("missing required property %q", key))
		}
		return "", nil
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", ArgError(fmt.Sprintf("%q must be a string", key))
	}
	return s, nil
}

// NonEmpty reads a string property that must be present and not empty.
func (o Args) NonEmpty(key string) (string, error) {
	s, err := o.String(key, true)
	if err == nil && s == "" {
		err = ArgError(fmt.Sprintf("invalid %s: expected a non-empty string", key))
	}
	return s, err
}

// Bool reads an optional boolean property.
func (o Args) Bool(key string) (bool, error) {
	v, ok := o.Lookup(key)
	if !ok {
		return false, nil
	}
	var b bool
	if json.Unmarshal(v, &b) != nil {
		return false, ArgError(fmt.Sprintf("%q must be a boolean", key))
	}
	return b, nil
}

// Positive reads an optional positive whole number; 0 when absent.
func (o Args) Positive(key string) (int, error) {
	v, ok := o.Lookup(key)
	if !ok {
		return 0, nil
	}
	var f float64
	if json.Unmarshal(v, &f) != nil {
		return 0, ArgError(fmt.Sprintf("%q must be a number", key))
	}
	if f < 1 || f != math.Trunc(f) || f > math.MaxInt32 {
		return 0, ArgError(fmt.Sprintf("invalid %s: expected a positive whole number, got %s", key, bytes.TrimSpace(v)))
	}
	return int(f), nil
}
