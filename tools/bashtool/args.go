package bashtool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// errNotObject is what the model hears when its arguments are not a JSON
// object at all (malformed JSON, an array, a bare value).
var errNotObject = errors.New("invalid arguments: expected a JSON object")

// argError is an argument problem; its message is model-visible verbatim.
type argError string

func (e argError) Error() string { return string(e) }

// object is the decoded top level of a call's arguments.
type object map[string]json.RawMessage

// parseObject decodes raw arguments. Empty arguments count as {} so that the
// model is told which property is missing rather than that nothing parsed.
func parseObject(raw json.RawMessage) (object, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return object{}, nil
	}
	if raw[0] != '{' {
		return nil, errNotObject
	}
	var obj object
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, errNotObject
	}
	if obj == nil {
		obj = object{}
	}
	return obj, nil
}

// jsonKind names the JSON type of a raw value by its first byte; the value
// has already been validated by json.Unmarshal.
func jsonKind(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "null"
	}
	switch v[0] {
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return "number"
}

// lookup returns a property's raw value; null counts as absent because models
// often spell an omitted optional property as null.
func (o object) lookup(key string) (json.RawMessage, bool) {
	v, ok := o[key]
	if !ok || jsonKind(v) == "null" {
		return nil, false
	}
	return v, true
}

// str reads an optional string property; wrongType reports a non-string.
func (o object) str(key string) (s string, present, wrongType bool) {
	v, ok := o.lookup(key)
	if !ok {
		return "", false, false
	}
	if jsonKind(v) != "string" {
		return "", true, true
	}
	if err := json.Unmarshal(v, &s); err != nil {
		return "", true, true
	}
	return s, true, false
}

// requiredString reads a required string property with the messages of
// tool-text.md.
func (o object) requiredString(key string) (string, error) {
	s, present, wrong := o.str(key)
	if !present {
		return "", argError(fmt.Sprintf("missing required property %q", key))
	}
	if wrong {
		return "", argError(fmt.Sprintf("%q must be a string", key))
	}
	return s, nil
}

// bashArgs are the validated arguments of one bash call.
type bashArgs struct {
	Command     string
	Description string
	// Timeout is zero when not given.
	Timeout    time.Duration
	Workdir    string
	Background bool
}

// parseBashArgs validates bash's raw arguments.
func parseBashArgs(raw json.RawMessage) (bashArgs, error) {
	obj, err := parseObject(raw)
	if err != nil {
		return bashArgs{}, err
	}
	return obj.bashArgs()
}

// bashArgs validates bash's arguments: first presence and JSON types in the
// order tool-text.md lists them, then values.
func (obj object) bashArgs() (bashArgs, error) {
	var a bashArgs
	var err error
	if a.Command, err = obj.requiredString("command"); err != nil {
		return a, err
	}
	descRaw, hasDesc := obj.lookup("description")
	if !hasDesc {
		return a, argError(`missing required property "description"`)
	}
	timeoutRaw, hasTimeout := obj.lookup("timeoutMs")
	if hasTimeout && jsonKind(timeoutRaw) != "number" {
		return a, argError(`"timeoutMs" must be a number`)
	}
	workdir, _, wrong := obj.str("workdir")
	if wrong {
		return a, argError(`"workdir" must be a string`)
	}
	a.Workdir = workdir
	if bgRaw, ok := obj.lookup("run_in_background"); ok {
		if jsonKind(bgRaw) != "boolean" {
			return a, argError(`"run_in_background" must be a boolean`)
		}
		a.Background = bytes.Equal(bytes.TrimSpace(bgRaw), []byte("true"))
	}

	if strings.TrimSpace(a.Command) == "" {
		return a, argError("invalid command: expected a non-empty string")
	}
	// tool-text.md has no type message for description, so a non-string
	// reads like an empty one.
	if jsonKind(descRaw) != "string" || json.Unmarshal(descRaw, &a.Description) != nil || strings.TrimSpace(a.Description) == "" {
		return a, argError("invalid description: expected a non-empty string")
	}
	if hasTimeout {
		ms, err := parseNumber(timeoutRaw)
		if err != nil {
			return a, argError(`"timeoutMs" must be a number`)
		}
		if !(ms > 0) {
			return a, argError("invalid timeoutMs: expected a positive number, got " + jsNumber(ms))
		}
		a.Timeout = millis(ms)
	}
	return a, nil
}

// parseNumber reads a JSON number the way JavaScript's JSON.parse does: a
// literal beyond float64's range is ±Infinity rather than an error.
func parseNumber(v json.RawMessage) (float64, error) {
	f, err := strconv.ParseFloat(string(bytes.TrimSpace(v)), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("parse number: %w", err)
	}
	return f, nil
}

// millis turns a positive millisecond count into a duration. A fraction
// rounds up so that no positive timeout becomes zero ("use the default");
// anything beyond time.Duration's range saturates and the executor clamps it
// to its maximum.
func millis(ms float64) time.Duration {
	ms = math.Ceil(ms)
	if ms >= float64(math.MaxInt64/int64(time.Millisecond)) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(ms) * time.Millisecond
}

// jsNumber formats f as JavaScript's String(f) does, so the model reads the
// same "got <value>" it would have from the original implementation.
func jsNumber(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		return "0" // also -0, as in JavaScript
	}
	if abs := math.Abs(f); abs >= 1e21 || abs < 1e-6 {
		// Go writes at least two exponent digits ("1e-07"); JavaScript
		// writes as many as needed ("1e-7").
		mant, exp, _ := strings.Cut(strconv.FormatFloat(f, 'e', -1, 64), "e")
		digits := strings.TrimLeft(exp[1:], "0")
		return mant + "e" + exp[:1] + digits
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}
