package httpapi_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"testing"

	"github.com/agentd/agentd/internal/httpapi"
)

var update = flag.Bool("update", false, "rewrite docs/openapi.json")

const openapiPath = "../../docs/openapi.json"

// TestOpenAPIDocument fails when the checked-in document differs from the one generated from
// the route table and the wire types (rewrite it with -update).
func TestOpenAPIDocument(t *testing.T) {
	doc, err := httpapi.OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(openapiPath, doc, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(openapiPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(doc, want) {
		t.Fatal("docs/openapi.json is out of date: run make openapi")
	}
}

// TestOpenAPIServed: /openapi.json is public and describes every route.
func TestOpenAPIServed(t *testing.T) {
	e := newEnv(t)
	var doc struct {
		OpenAPI string                    `json:"openapi"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	e.must("GET", "/openapi.json", "", nil, http.StatusOK, &doc)
	if doc.OpenAPI == "" {
		t.Fatal("no openapi version")
	}
	for _, p := range []string{"/api/v1/app-conversations", "/api/conversations", "/api/add-git-providers",
		"/api/v1/sandboxes/{sandbox_id}/pause", "/api/v1/sandbox-specs/search"} {
		if _, ok := doc.Paths[p]; !ok {
			t.Errorf("path %s missing from the served document", p)
		}
	}
	raw, _ := json.Marshal(doc)
	if !bytes.Contains(raw, []byte("X-Session-API-Key")) && !bytes.Contains(raw, []byte("APIKeyHeader")) {
		t.Error("the document names no security scheme")
	}
}
