package filetool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
)

// argError is an argument problem; its message is what the model reads
// after "Error: ".
type argError string

func (e argError) Error() string { return string(e) }

// object is a call's arguments, decoded at the top level.
type object map[string]json.RawMessage

// parseObject decodes raw arguments; empty ones count as {} so that the
// model hears which property is missing. Unknown keys are ignored.
func parseObject(raw json.RawMessage) (object, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return object{}, nil
	}
	var obj object
	if raw[0] != '{' || json.Unmarshal(raw, &obj) != nil {
		return nil, argError("invalid arguments: expected a JSON object")
	}
	if obj == nil {
		obj = object{}
	}
	return obj, nil
}

// lookup returns a property; null counts as absent.
func (o object) lookup(key string) (json.RawMessage, bool) {
	v, ok := o[key]
	if !ok || string(bytes.TrimSpace(v)) == "null" {
		return nil, false
	}
	return v, true
}

// str reads a string property; required ones must be present.
func (o object) str(key string, required bool) (string, error) {
	v, ok := o.lookup(key)
	if !ok {
		if required {
			return "", argError(fmt.Sprintf("missing required property %q", key))
		}
		return "", nil
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", argError(fmt.Sprintf("%q must be a string", key))
	}
	return s, nil
}

// nonEmpty reads a string property that must be present and not empty.
func (o object) nonEmpty(key string) (string, error) {
	s, err := o.str(key, true)
	if err == nil && s == "" {
		err = argError(fmt.Sprintf("invalid %s: expected a non-empty string", key))
	}
	return s, err
}

// boolean reads an optional boolean property.
func (o object) boolean(key string) (bool, error) {
	v, ok := o.lookup(key)
	if !ok {
		return false, nil
	}
	var b bool
	if json.Unmarshal(v, &b) != nil {
		return false, argError(fmt.Sprintf("%q must be a boolean", key))
	}
	return b, nil
}

// positive reads an optional positive whole number; 0 when absent.
func (o object) positive(key string) (int, error) {
	v, ok := o.lookup(key)
	if !ok {
		return 0, nil
	}
	var f float64
	if json.Unmarshal(v, &f) != nil {
		return 0, argError(fmt.Sprintf("%q must be a number", key))
	}
	if f < 1 || f != math.Trunc(f) || f > math.MaxInt32 {
		return 0, argError(fmt.Sprintf("invalid %s: expected a positive whole number, got %s", key, bytes.TrimSpace(v)))
	}
	return int(f), nil
}
