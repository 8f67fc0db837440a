//go:build tools

// Package deps pins the module's dependencies while the packages that use them are being written.

package deps

import (
	_ "github.com/coder/acp-go-sdk"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/google/uuid"
	_ "github.com/openai/openai-go/v3"
	_ "github.com/sourcegraph/jsonrpc2"
	_ "go.uber.org/goleak"
	_ "go.uber.org/zap"
	_ "go.uber.org/zap/zaptest"
	_ "golang.org/x/sys/unix"
	_ "golang.org/x/tools/txtar"
)
