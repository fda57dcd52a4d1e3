// Package mcptest is MCP tool servers for tests, written with the same SDK agentd's client
// uses: one served over stdio, by a test binary that runs itself again (Main) or by the
// statically linked program mcpserver (BuildServer), and the same served over SSE and
// streamable HTTP (HTTP on loopback, or Handler anywhere).
package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ModeEnv, set in a test binary's environment, makes Main serve instead of running tests:
// "stdio" serves the test tools, "crash" exits at once saying why on stderr, "hang" reads
// its input and never answers.
const ModeEnv = "AGENTD_MCPTEST_MODE"

// PNG is the image the image tool answers with.
var PNG = []byte("\x89PNG\r\n\x1a\nnot really")

// NewServer returns a server with the test tools:
//   - echo {text}: the text back; with a "env" argument it answers that variable's value
//   - image: PNG as an image
//   - sum {a, b}: the sum as structured content
//   - pid: the server's process id
//   - hang: waits until the call is cancelled, or stop is closed
//   - fail: an answer with isError set
//   - add_tool {name}: adds a tool of that name, which says list_changed to clients
//   - tick {file}: from now on appends the time (Unix seconds with microseconds) to file (in
//     its working directory) every 50 ms, until the server exits
func NewServer(stop <-chan struct{}) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "agentd-mcptest", Version: "1"}, nil)
	type echoArgs struct {
		Text string `json:"text,omitempty"`
		Env  string `json:"env,omitempty"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Says the text back."}, func(_ context.Context, _ *sdk.CallToolRequest, a echoArgs) (*sdk.CallToolResult, any, error) {
		text := a.Text
		if a.Env != "" {
			v, ok := os.LookupEnv(a.Env)
			text = fmt.Sprintf("%s=%q set=%v", a.Env, v, ok)
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "image", Description: "An image.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a picture"}, &sdk.ImageContent{MIMEType: "image/png", Data: PNG}}}, nil, nil
	})
	type sumArgs struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	type sumOut struct {
		Sum int `json:"sum"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "sum", Description: "Adds two numbers."}, func(_ context.Context, _ *sdk.CallToolRequest, a sumArgs) (*sdk.CallToolResult, sumOut, error) {
		return nil, sumOut{Sum: a.A + a.B}, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "pid", Description: "The server's process id."}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprint(os.Getpid())}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "hang", Description: "Never answers."}, func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-stop:
			return nil, nil, fmt.Errorf("server stopping")
		}
	})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Fails."}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return nil, nil, fmt.Errorf("it failed on purpose")
	})
	type tickArgs struct {
		File string `json:"file"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "tick", Description: "Counts in a file."}, func(_ context.Context, _ *sdk.CallToolRequest, a tickArgs) (*sdk.CallToolResult, any, error) {
		if a.File == "" {
			return nil, nil, fmt.Errorf("no file")
		}
		f, err := os.OpenFile(a.File, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return nil, nil, err
		}
		go func() {
			for {
				now := time.Now()
				fmt.Fprintf(f, "%d.%06d\n", now.Unix(), now.Nanosecond()/1000)
				time.Sleep(50 * time.Millisecond)
			}
		}()
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ticking"}}}, nil, nil
	})
	type addArgs struct {
		Name string `json:"name"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "add_tool", Description: "Adds a tool."}, func(_ context.Context, _ *sdk.CallToolRequest, a addArgs) (*sdk.CallToolResult, any, error) {
		sdk.AddTool(s, &sdk.Tool{Name: a.Name, Description: "Added at run time."}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "late"}}}, nil, nil
		})
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "added"}}}, nil, nil
	})
	return s
}

// Main serves as ModeEnv says and exits, if it is set; otherwise it returns. Call it first
// in a TestMain.
func Main() {
	if mode := os.Getenv(ModeEnv); mode != "" {
		Serve(mode)
	}
}

// Serve serves on stdin and stdout as mode says ("stdio", "crash" or "hang"; see ModeEnv),
// and exits.
func Serve(mode string) {
	switch mode {
	case "stdio":
		err := NewServer(nil).Run(context.Background(), &sdk.StdioTransport{})
		if err != nil {
			fmt.Fprintln(os.Stderr, "mcptest:", err)
			os.Exit(1)
		}
	case "crash":
		fmt.Fprintln(os.Stderr, "mcptest: crashing on purpose")
		os.Exit(3)
	case "hang":
		buf := make([]byte, 4096)
		for {
			if _, err := os.Stdin.Read(buf); err != nil {
				break
			}
		}
	}
	os.Exit(0)
}

// HTTP serves NewServer over SSE (at /sse) and streamable HTTP (at /mcp) on loopback. With a
// key, requests without "Authorization: Bearer key" are refused with 401.
func HTTP(t testing.TB, key string) (sseURL, shttpURL string) {
	t.Helper()
	// Closing stop ends calls that hang, whose handlers the SSE transport does not cancel
	// when its client gives up, so that the server can shut down.
	stop := make(chan struct{})
	hs := httptest.NewUnstartedServer(Handler(key, stop))
	hs.Config.ReadHeaderTimeout = 10 * time.Second
	hs.Start()
	t.Cleanup(func() {
		close(stop)
		hs.CloseClientConnections()
		hs.Close()
	})
	return hs.URL + "/sse", hs.URL + "/mcp"
}

// Handler is NewServer over SSE (at paths ending in /sse) and streamable HTTP (at paths
// ending in /mcp), so that it can be mounted under any prefix. With a key, requests without
// "Authorization: Bearer key" are refused with 401. Closing stop ends the calls that hang.
func Handler(key string, stop <-chan struct{}) http.Handler {
	srv := NewServer(stop)
	get := func(*http.Request) *sdk.Server { return srv }
	sse, shttp := sdk.NewSSEHandler(get, nil), sdk.NewStreamableHTTPHandler(get, nil)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if key != "" && r.Header.Get("Authorization") != "Bearer "+key {
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "bad key"})
			return
		}
		switch {
		case strings.HasSuffix(r.URL.Path, "/sse"):
			sse.ServeHTTP(w, r)
		case strings.HasSuffix(r.URL.Path, "/mcp"):
			shttp.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	})
}

// BuildServer builds the test server as a program of its own (package mcpserver), statically
// linked, to out. The go command must be in PATH and the working directory in the module (as
// under go test).
func BuildServer(ctx context.Context, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, "github.com/agentd/agentd/internal/tool/mcp/mcptest/mcpserver")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build the test MCP server: %w\n%s", err, b)
	}
	return nil
}
