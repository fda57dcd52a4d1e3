package apitypes

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/agentd/agentd/internal/wire"
)

// A start task writes its stored request as it is. That request is a decoded start request
// marshalled, so writing it as it is must give what decoding it back and marshalling it again
// gives: the echo clients saw when each answer decoded and encoded the request.
func TestStartRequestEchoIsItsOwnRoundTrip(t *testing.T) {
	for _, body := range []string{
		`{}`,
		`{"initial_message":{"role":"user","content":[{"type":"text","text":"fix <the> \"bug\" & ünïcode"},{"type":"image","image_urls":["https://img.example/a.png"]}],"run":true},
		  "selected_repository":"acme/app","selected_branch":"main","git_provider":"github","title":"t","trigger":"gui",
		  "pr_number":[3,1],"agent_type":"default","conversation_instructions":"be brief",
		  "secrets":{"API_TOKEN":"s3cret","STORED_ONE":null},
		  "suggested_task":{"repo":"acme/app","issue_number":7,"title":"Broken"},
		  "mcp_config":{"sse_servers":["http://mcp.example/sse"],"stdio_servers":[{"name":"fs","command":"npx","args":["-y","srv"]}],"shttp_servers":[{"url":"https://mcp.example/mcp"}]},
		  "confirmation_policy":{"kind":"ConfirmRisky","threshold":"MEDIUM"},
		  "conversation_id":"3f0e6c1a-8a5b-4f8e-9d0a-1b2c3d4e5f60","system_message_suffix":"x","public":true,
		  "tags":{"b":"2","a":"1"},"plugins":[],"dependency_repos":[]}`,
		`{"secrets":["B_SECRET","A_SECRET"],"pr_number":[]}`,
	} {
		var req AppConversationStartRequest
		if err := wire.DecodeJSON([]byte(body), &req); err != nil {
			t.Fatalf("decode %s: %v", body, err)
		}
		if req.PRNumber == nil {
			req.PRNumber = []int{} // as the server stores it
		}
		stored, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(stored, []byte("s3cret")) {
			t.Fatalf("the stored request shows a secret's value: %s", stored)
		}
		var again AppConversationStartRequest
		if err := json.Unmarshal(stored, &again); err != nil {
			t.Fatalf("decode the stored request %s: %v", stored, err)
		}
		want, err := json.Marshal(again)
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(AppConversationStartTask{Request: StartRequestEcho(stored)})
		if err != nil {
			t.Fatal(err)
		}
		var task struct{ Request json.RawMessage }
		if err := json.Unmarshal(got, &task); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(task.Request, want) {
			t.Fatalf("echo:\n got %s\nwant %s", task.Request, want)
		}
	}
}

// A task stored without a request echoes an empty one, its pr_number a list.
func TestStartRequestEchoOfNothing(t *testing.T) {
	got, err := json.Marshal(StartRequestEcho(nil))
	if err != nil {
		t.Fatal(err)
	}
	var req map[string]any
	if err := json.Unmarshal(got, &req); err != nil {
		t.Fatal(err)
	}
	if prs, ok := req["pr_number"].([]any); !ok || len(prs) != 0 {
		t.Fatalf("pr_number %v in %s, want []", req["pr_number"], got)
	}
}
