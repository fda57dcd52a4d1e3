package customsecret_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/customsecret"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/secret"
	"github.com/agentd/agentd/internal/store/sqlite"
)

const user, other = "user-1", "user-2"

// fixture is a service on a real SQLite store and keyring, with the store beside it for
// reading what the service stored, and the users whose secrets it said changed.
type fixture struct {
	svc     *customsecret.Service
	store   *sqlite.Store
	changed []string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(t.Context(), filepath.Join(dir, "agentd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	kr, err := secret.LoadOrCreate(filepath.Join(dir, "keyring.json"))
	if err != nil {
		t.Fatal(err)
	}
	now := func() time.Time { return time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC) }
	f := &fixture{svc: customsecret.NewService(st, kr, now), store: st}
	f.svc.OnSecretsChange(func(userID string) { f.changed = append(f.changed, userID) })
	return f
}

func ptr(s string) *string { return &s }

func TestValidation(t *testing.T) {
	f := newFixture(t)
	ok := customsecret.Plain{Name: "API_TOKEN", Description: "the API", Value: "s3cr3t-value"}
	for _, tc := range []struct {
		name  string
		in    customsecret.Plain
		field string
	}{
		{"empty name", customsecret.Plain{Value: ok.Value}, "name"},
		{"name with a dash", customsecret.Plain{Name: "API-TOKEN", Value: ok.Value}, "name"},
		{"name starting with a digit", customsecret.Plain{Name: "1TOKEN", Value: ok.Value}, "name"},
		{"name with a space", customsecret.Plain{Name: "MY TOKEN", Value: ok.Value}, "name"},
		{"name too long", customsecret.Plain{Name: strings.Repeat("A", 257), Value: ok.Value}, "name"},
		{"reserved name", customsecret.Plain{Name: "PROMPT_COMMAND", Value: ok.Value}, "name"},
		{"agentd's own variable", customsecret.Plain{Name: "__agentd_n", Value: ok.Value}, "name"},
		{"value too short to mask", customsecret.Plain{Name: "PIN", Value: "12345"}, "value"},
		{"value with NUL", customsecret.Plain{Name: "BIN", Value: "abc\x00defgh"}, "value"},
		{"value too long", customsecret.Plain{Name: "BIG", Value: strings.Repeat("x", customsecret.MaxValueLen+1)}, "value"},
		{"description too long", customsecret.Plain{Name: "DESC", Description: strings.Repeat("d", 2001), Value: ok.Value}, "description"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := f.svc.Create(t.Context(), user, tc.in)
			var ie *customsecret.InvalidError
			if !errors.As(err, &ie) || ie.Field != tc.field {
				t.Fatalf("create: %v, want an InvalidError on %s", err, tc.field)
			}
			if tc.in.Value != "" && strings.Contains(ie.Msg, tc.in.Value) {
				t.Errorf("the message quotes the value: %s", ie.Msg)
			}
		})
	}
	if ss, _ := f.store.CustomSecrets(t.Context(), user); len(ss) != 0 {
		t.Fatalf("invalid secrets were stored: %+v", ss)
	}
	if len(f.changed) != 0 {
		t.Fatalf("refused creates reported changes: %v", f.changed)
	}
	for _, name := range []string{"_", "a", "A_1", "lower_case", "X" + strings.Repeat("9", 255)} {
		if err := customsecret.CheckName(name); err != nil {
			t.Errorf("CheckName(%q): %v", name, err)
		}
	}
}

func TestLifecycle(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	must("create", f.svc.Create(ctx, user, customsecret.Plain{Name: "API_TOKEN", Description: "the API", Value: "value-one-111"}))
	must("create", f.svc.Create(ctx, user, customsecret.Plain{Name: "DEPLOY_KEY", Value: "value-two-222"}))
	must("create", f.svc.Create(ctx, other, customsecret.Plain{Name: "API_TOKEN", Value: "value-other-333"}))
	if err := f.svc.Create(ctx, user, customsecret.Plain{Name: "API_TOKEN", Value: "value-dup-444"}); !errors.Is(err, customsecret.ErrExists) {
		t.Fatalf("duplicate create: %v, want ErrExists", err)
	}

	// Sealed at rest: the store holds no value in plain text.
	ss, err := f.store.CustomSecrets(ctx, user)
	must("read the store", err)
	for _, s := range ss {
		if bytes.Contains(s.ValueSealed, []byte("value-")) {
			t.Errorf("%s is stored in plain text", s.Name)
		}
	}

	infos, next, err := f.svc.Search(ctx, user, "", paging.Query{})
	must("search", err)
	want := []customsecret.Info{{Name: "API_TOKEN", Description: "the API"}, {Name: "DEPLOY_KEY"}}
	if !reflect.DeepEqual(infos, want) || next != "" {
		t.Fatalf("search: %+v %q, want %+v", infos, next, want)
	}

	got, err := f.svc.Lookup(ctx, user, []string{"DEPLOY_KEY", "MISSING", "API_TOKEN"})
	must("lookup", err)
	wantPlain := []customsecret.Plain{{Name: "DEPLOY_KEY", Value: "value-two-222"}, {Name: "API_TOKEN", Description: "the API", Value: "value-one-111"}}
	if !reflect.DeepEqual(got, wantPlain) {
		t.Fatalf("lookup: %+v, want %+v", got, wantPlain)
	}

	// Update: the value alone, then a rename with a description; absent fields stay.
	must("update value", f.svc.Update(ctx, user, "DEPLOY_KEY", customsecret.Update{Value: ptr("value-new-555")}))
	must("rename", f.svc.Update(ctx, user, "DEPLOY_KEY", customsecret.Update{Name: ptr("SSH_KEY"), Description: ptr("for deploys")}))
	got, err = f.svc.Lookup(ctx, user, []string{"SSH_KEY", "DEPLOY_KEY"})
	must("lookup after update", err)
	if want := []customsecret.Plain{{Name: "SSH_KEY", Description: "for deploys", Value: "value-new-555"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after update: %+v, want %+v", got, want)
	}
	if err := f.svc.Update(ctx, user, "SSH_KEY", customsecret.Update{Name: ptr("API_TOKEN")}); !errors.Is(err, customsecret.ErrExists) {
		t.Fatalf("rename onto a taken name: %v", err)
	}
	if err := f.svc.Update(ctx, user, "NOPE", customsecret.Update{Value: ptr("value-x-666")}); !errors.Is(err, customsecret.ErrNotFound) {
		t.Fatalf("update of a missing secret: %v", err)
	}
	var ie *customsecret.InvalidError
	if err := f.svc.Update(ctx, user, "SSH_KEY", customsecret.Update{Value: ptr("short")}); !errors.As(err, &ie) {
		t.Fatalf("update to a short value: %v", err)
	}
	// Another user's secret of the same name is untouched; theirs is not ours to change.
	if err := f.svc.Update(ctx, other, "SSH_KEY", customsecret.Update{Value: ptr("value-y-777")}); !errors.Is(err, customsecret.ErrNotFound) {
		t.Fatalf("update of another user's secret: %v", err)
	}

	values, err := f.svc.SecretValues(ctx, user)
	must("values", err)
	if want := []string{"value-one-111", "value-new-555"}; !reflect.DeepEqual(values, want) {
		t.Fatalf("values %v, want %v", values, want)
	}

	must("delete", f.svc.Delete(ctx, user, "SSH_KEY"))
	if err := f.svc.Delete(ctx, user, "SSH_KEY"); !errors.Is(err, customsecret.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	values, err = f.svc.SecretValues(ctx, other)
	must("other's values", err)
	if want := []string{"value-other-333"}; !reflect.DeepEqual(values, want) {
		t.Fatalf("other's values %v, want %v", values, want)
	}
	// Every change was reported, refused ones not.
	if want := []string{user, user, other, user, user, user}; !reflect.DeepEqual(f.changed, want) {
		t.Fatalf("changes reported for %v, want %v", f.changed, want)
	}
}
