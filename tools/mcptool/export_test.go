package mcptool

// SetProtocolVersion makes the client ask for MCP protocol version v ("" =
// the SDK's latest), so tests cover the session and the stateless protocol.
func SetProtocolVersion(o *Options, v string) { o.protocolVersion = v }
