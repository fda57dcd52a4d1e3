package event

// KindMCPServerError is agentd's own kind for an MCP server left out of a run.
const KindMCPServerError = "MCPServerErrorEvent"

// MCPServerErrorEvent records an MCP server that could not be started or reached when the
// agent's run began, so that the user learns why its tools are missing; the conversation goes
// on without them. It is agentd's own kind: OpenHands clients ignore kinds they do not know,
// and the model never sees it. Detail never holds the server's API key.
type MCPServerErrorEvent struct {
	Base
	Server    string `json:"server"`
	Transport string `json:"transport"`
	Detail    string `json:"detail"`
}

func (*MCPServerErrorEvent) eventKind() string { return KindMCPServerError }
