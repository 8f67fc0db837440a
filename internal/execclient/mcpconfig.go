package execclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-acp/dsh-acp/internal/untrusted"
)

// mcpFileServer is one entry of an --mcp-config file, in the shape other
// agents' files use: a stdio server (command, args, env) or an HTTP one
// (url, headers).
type mcpFileServer struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	// Type is accepted for files written for other tools ("stdio",
	// "http"); the fields decide. "sse" is refused: an HTTP+SSE server
	// would otherwise be posted to as a streamable one and fail obscurely.
	Type string `json:"type"`
}

// mcpFileTypes are the "type" values the fields can stand for.
var mcpFileTypes = []string{"", "stdio", "http", "streamable-http", "streamableHttp"}

// LoadMCPConfig reads {"mcpServers": {name: server}} into the servers an
// exec run's session starts, in name order. An exec run has no editor to
// send them.
func LoadMCPConfig(path string) ([]acpsdk.McpServer, error) {
	if path == "" {
		return []acpsdk.McpServer{}, nil
	}
	data, err := untrusted.ReadWhole(path, 0, 8<<20)
	if err != nil {
		return nil, fmt.Errorf("--mcp-config: %w", err)
	}
	var file struct {
		MCPServers map[string]mcpFileServer `json:"mcpServers"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&file); err != nil {
		return nil, fmt.Errorf("--mcp-config %s: %w (want {\"mcpServers\": {NAME: {\"command\": …, \"args\": […], \"env\": {…}} or {\"url\": …, \"headers\": {…}}}})", path, err)
	}
	if file.MCPServers == nil {
		return nil, fmt.Errorf("--mcp-config %s: no \"mcpServers\" object", path)
	}
	names := make([]string, 0, len(file.MCPServers))
	for n := range file.MCPServers {
		names = append(names, n)
	}
	slices.Sort(names)
	servers := make([]acpsdk.McpServer, 0, len(names))
	for _, n := range names {
		s, err := file.MCPServers[n].server(n)
		if err != nil {
			return nil, fmt.Errorf("--mcp-config %s: server %q: %w", path, n, err)
		}
		servers = append(servers, s)
	}
	return servers, nil
}

func (f mcpFileServer) server(name string) (acpsdk.McpServer, error) {
	switch {
	case f.Type == "sse":
		return acpsdk.McpServer{}, errors.New(`type "sse": the deprecated HTTP+SSE transport is not supported; give the server's streamable HTTP url (type "http")`)
	case !slices.Contains(mcpFileTypes, f.Type):
		return acpsdk.McpServer{}, fmt.Errorf("type %q: want stdio (command, args, env) or http (url, headers)", f.Type)
	case f.Command != "" && f.URL != "":
		return acpsdk.McpServer{}, errors.New("has both command and url: give one")
	case f.Command != "":
		env := []acpsdk.EnvVariable{}
		for _, k := range sortedKeys(f.Env) {
			env = append(env, acpsdk.EnvVariable{Name: k, Value: f.Env[k]})
		}
		args := f.Args
		if args == nil {
			args = []string{}
		}
		return acpsdk.McpServer{Stdio: &acpsdk.McpServerStdio{Name: name, Command: f.Command, Args: args, Env: env}}, nil
	case f.URL != "":
		headers := []acpsdk.HttpHeader{}
		for _, k := range sortedKeys(f.Headers) {
			headers = append(headers, acpsdk.HttpHeader{Name: k, Value: f.Headers[k]})
		}
		return acpsdk.McpServer{Http: &acpsdk.McpServerHttpInline{Name: name, Type: "http", Url: f.URL, Headers: headers}}, nil
	}
	return acpsdk.McpServer{}, errors.New("needs a command (a stdio server) or a url (an HTTP server)")
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
