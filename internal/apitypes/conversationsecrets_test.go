package apitypes

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/wire"
)

// TestSecretSources: the secrets OpenHands' SDK sends, as values, StaticSecrets and
// LookupSecrets of the sandbox's secret routes; anything else is a problem at its place that
// never quotes a value.
func TestSecretSources(t *testing.T) {
	const body = `{"secrets": {
		"PLAIN": "plain-value-1",
		"STATIC": {"kind": "StaticSecret", "value": "static-value-2", "description": "d"},
		"BARE": {"value": "bare-value-3"},
		"AGENT": {"kind": "LookupSecret", "url": "http://127.0.0.1:3001/api/settings/secrets/MY_TOKEN", "headers": {"X-Session-API-Key": "k"}},
		"PREFIXED": {"url": "https://agentd.example/agent-server/sb1/api/settings/secrets/OTHER"},
		"SCOPED": {"kind": "LookupSecret", "url": "https://agentd.example/api/v1/sandboxes/sb1/settings/secrets/GH_TOKEN"}}}`
	var req ConversationSecretsRequest
	if err := wire.DecodeJSON([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	want := SecretSources{
		Inline:  map[string]string{"PLAIN": "plain-value-1", "STATIC": "static-value-2", "BARE": "bare-value-3"},
		Lookups: map[string]string{"AGENT": "MY_TOKEN", "PREFIXED": "OTHER", "SCOPED": "GH_TOKEN"},
	}
	if !reflect.DeepEqual(req.Secrets, want) {
		t.Fatalf("decoded %+v, want %+v", req.Secrets, want)
	}

	for _, tc := range []struct {
		body string
		loc  []any
	}{
		{`{}`, []any{"body", "secrets"}},
		{`{"secrets": ["A"]}`, []any{"body", "secrets"}},
		{`{"secrets": {"A": 12345678}}`, []any{"body", "secrets", "A"}},
		{`{"secrets": {"A": {"kind": "StaticSecret", "value": null}}}`, []any{"body", "secrets", "A", "value"}},
		{`{"secrets": {"A": {"kind": "Vault", "value": "secret-value-9"}}}`, []any{"body", "secrets", "A", "kind"}},
		{`{"secrets": {"A": {"kind": "LookupSecret", "url": "https://vault.example/v1/secret/data/A"}}}`, []any{"body", "secrets", "A", "url"}},
		{`{"secrets": {"A": {"kind": "LookupSecret", "url": "https://x.example/api/settings/secrets/"}}}`, []any{"body", "secrets", "A", "url"}},
		{`{"secrets": {"A": {"kind": "LookupSecret", "url": "https://x.example/api/settings/secrets/A?x=1"}}}`, []any{"body", "secrets", "A", "url"}},
		{`{"secrets": {"A": {"kind": "LookupSecret", "url": "https://x.example/other/settings/secrets/A"}}}`, []any{"body", "secrets", "A", "url"}},
		{`{"secrets": {"A": {"kind": "LookupSecret", "url": 5}}}`, []any{"body", "secrets", "A", "url"}},
	} {
		var req ConversationSecretsRequest
		err := wire.DecodeJSON([]byte(tc.body), &req)
		var we *wire.Error
		if !errors.As(err, &we) || len(we.Problems) != 1 || !reflect.DeepEqual(we.Problems[0].Loc, tc.loc) {
			t.Errorf("%s: %v, want one problem at %v", tc.body, err, tc.loc)
			continue
		}
		if strings.Contains(we.Problems[0].Msg, "secret-value-9") || strings.Contains(we.Problems[0].Msg, "12345678") {
			t.Errorf("%s: the problem quotes the value: %s", tc.body, we.Problems[0].Msg)
		}
	}
}
