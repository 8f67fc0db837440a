//go:build race

package openai_test

// raceEnabled: the race detector's shadow memory makes RSS meaningless.
const raceEnabled = true
