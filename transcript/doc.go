// Package transcript holds the golden transcript tests of dsh-acp: each
// scenario in testdata/transcripts starts the real binary with a scripted
// model, drives it over stdio with an independent JSON-RPC client
// (sourcegraph/jsonrpc2) and compares every frame in both directions, plus
// every request the model was sent, with a golden file. The package has no
// non-test code; see testdata/transcripts/README.md for the scenario format.
package transcript
