//go:build !race

package openai_test

const raceEnabled = false
