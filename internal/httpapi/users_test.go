package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/auth"
)

type userJSON struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	IsAdmin   bool      `json:"is_admin"`
	CreatedAt time.Time `json:"created_at"`
}

type keyJSON struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Prefix    string     `json:"prefix"`
	UserID    string     `json:"user_id"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at"`
	Key       *string    `json:"key"`
}

// me answers who key belongs to, or fails the test.
func (e *env) me(key string) userJSON {
	e.t.Helper()
	var u userJSON
	e.must("GET", "/api/v1/users/me", key, nil, http.StatusOK, &u)
	return u
}

func TestUsersMe(t *testing.T) {
	e := newEnv(t)
	admin := e.me(adminKey)
	if admin.Name != "admin" || !admin.IsAdmin || admin.ID == "" || admin.CreatedAt.IsZero() {
		t.Fatalf("admin's /me: %+v", admin)
	}
	id, key := e.newUser("alice")
	if got := e.me(key); got.ID != id || got.Name != "alice" || got.IsAdmin {
		t.Fatalf("alice's /me: %+v, want id %s, not admin", got, id)
	}
}

func TestCreateUser(t *testing.T) {
	e := newEnv(t)
	_, alice := e.newUser("alice")

	t.Run("admin creates users", func(t *testing.T) {
		e := e.in(t)
		before := time.Now().Add(-time.Second)
		var u userJSON
		e.must("POST", "/api/v1/users", adminKey, map[string]any{"name": "bob", "is_admin": true}, http.StatusCreated, &u)
		if u.ID == "" || u.Name != "bob" || !u.IsAdmin || u.CreatedAt.Before(before) {
			t.Fatalf("created %+v, want bob, an admin, created now", u)
		}
		// The new admin can create users in turn.
		var k keyJSON
		e.must("POST", "/api/keys", adminKey, map[string]any{"name": "bob", "user_id": u.ID}, http.StatusCreated, &k)
		e.must("POST", "/api/v1/users", *k.Key, map[string]any{"name": "carol"}, http.StatusCreated, nil)
	})

	for _, tc := range []struct {
		name   string
		key    string
		body   any
		status int
		detail string
		typ    string
		loc    []any
	}{
		{name: "non-admin", key: alice, body: map[string]any{"name": "mallory"}, status: 403, detail: "Admin rights required"},
		{name: "non-admin making an admin", key: alice, body: map[string]any{"name": "mallory", "is_admin": true}, status: 403, detail: "Admin rights required"},
		{name: "duplicate name", key: adminKey, body: map[string]any{"name": "alice"}, status: 409, detail: "already exists"},
		{name: "missing name", key: adminKey, body: map[string]any{"is_admin": false}, typ: "missing", loc: []any{"body", "name"}},
		{name: "empty name", key: adminKey, body: map[string]any{"name": ""}, typ: "string_too_short", loc: []any{"body", "name"}},
		{name: "blank name", key: adminKey, body: map[string]any{"name": "   "}, typ: "value_error", loc: []any{"body", "name"}},
		{name: "long name", key: adminKey, body: map[string]any{"name": strings.Repeat("n", 101)}, typ: "string_too_long", loc: []any{"body", "name"}},
		{name: "name not a string", key: adminKey, body: map[string]any{"name": 5}, typ: "string_type", loc: []any{"body", "name"}},
		{name: "is_admin not a bool", key: adminKey, body: map[string]any{"name": "dave", "is_admin": "yes"}, typ: "bool_type", loc: []any{"body", "is_admin"}},
		{name: "unknown field", key: adminKey, body: map[string]any{"name": "dave", "extra": 1}, typ: "extra_forbidden", loc: []any{"body", "extra"}},
		{name: "no body", key: adminKey, body: nil, typ: "missing", loc: []any{"body"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.in(t)
			status, body := e.call("POST", "/api/v1/users", tc.key, tc.body)
			if tc.loc != nil {
				wantProblem(t, status, body, tc.typ, tc.loc...)
				return
			}
			if status != tc.status {
				t.Fatalf("%d %s, want %d", status, body, tc.status)
			}
			wantDetail(t, body, tc.detail)
		})
	}

	t.Run("rejected requests created nobody", func(t *testing.T) {
		e := e.in(t)
		// Names tried above are free.
		for _, name := range []string{"mallory", "dave"} {
			e.must("POST", "/api/v1/users", adminKey, map[string]any{"name": name}, http.StatusCreated, nil)
		}
	})
}

func TestAPIKeys(t *testing.T) {
	e := newEnv(t)
	aliceID, alice := e.newUser("alice")
	bobID, bob := e.newUser("bob")

	var created keyJSON
	body := e.must("POST", "/api/keys", alice, map[string]any{"name": "laptop"}, http.StatusCreated, &created)
	if created.Key == nil || !strings.HasPrefix(*created.Key, "agd_") || created.ID == "" || created.Name != "laptop" ||
		created.UserID != aliceID || created.ExpiresAt != nil || created.Prefix == "" || !strings.HasPrefix(*created.Key, created.Prefix) ||
		len(created.Prefix) >= len(*created.Key) {
		t.Fatalf("created key %s: want a key for alice, its prefix, no expiry", body)
	}
	newKey := *created.Key

	t.Run("the new key authenticates", func(t *testing.T) {
		e := e.in(t)
		if u := e.me(newKey); u.ID != aliceID {
			t.Fatalf("the new key is %s's, want alice's", u.Name)
		}
	})

	t.Run("listing shows the prefix but never the key", func(t *testing.T) {
		e := e.in(t)
		var list []keyJSON
		body := e.must("GET", "/api/keys", alice, nil, http.StatusOK, &list)
		if strings.Contains(string(body), newKey) || strings.Contains(string(body), alice) || strings.Contains(string(body), `"key"`) {
			t.Fatalf("key list shows a key: %s", body)
		}
		if len(list) != 2 {
			t.Fatalf("alice has %d keys, want 2: %s", len(list), body)
		}
		var found bool
		for _, k := range list {
			if k.UserID != aliceID {
				t.Fatalf("alice's list has %+v", k)
			}
			if k.ID == created.ID {
				found = k.Prefix == created.Prefix && k.Name == "laptop" && k.CreatedAt.Equal(created.CreatedAt)
			}
		}
		if !found {
			t.Fatalf("key list %s does not show the new key with its prefix", body)
		}
	})

	t.Run("admin acts for other users", func(t *testing.T) {
		e := e.in(t)
		var k keyJSON
		e.must("POST", "/api/keys", adminKey, map[string]any{"name": "ci", "user_id": bobID}, http.StatusCreated, &k)
		if k.UserID != bobID || e.me(*k.Key).ID != bobID {
			t.Fatalf("admin's key for bob: %+v", k)
		}
		var list []keyJSON
		e.must("GET", "/api/keys?user_id="+bobID, adminKey, nil, http.StatusOK, &list)
		if len(list) != 2 {
			t.Fatalf("bob has %d keys, want 2", len(list))
		}
		e.must("DELETE", "/api/keys/"+k.ID+"?user_id="+bobID, adminKey, nil, http.StatusOK, nil)
		if status, _ := e.call("GET", "/api/v1/users/me", *k.Key, nil); status != http.StatusUnauthorized {
			t.Fatalf("deleted key answered %d, want 401", status)
		}
	})

	for _, tc := range []struct {
		name, method, path string
		body               any
	}{
		{"create for another user", "POST", "/api/keys", map[string]any{"name": "x", "user_id": aliceID}},
		{"list another user's", "GET", "/api/keys?user_id=" + aliceID, nil},
		{"delete another user's", "DELETE", "/api/keys/" + created.ID + "?user_id=" + aliceID, nil},
	} {
		t.Run("non-admin cannot "+tc.name, func(t *testing.T) {
			e := e.in(t)
			status, body := e.call(tc.method, tc.path, bob, tc.body)
			if status != http.StatusForbidden {
				t.Fatalf("%d %s, want 403", status, body)
			}
			wantDetail(t, body, "Admin rights required")
		})
	}

	t.Run("a user keeps at most MaxKeysPerUser keys", func(t *testing.T) {
		e := e.in(t)
		carolID, carol := e.newUser("carol") // with its first key
		for i := 1; i < auth.MaxKeysPerUser; i++ {
			if status, body := e.call("POST", "/api/keys", carol, map[string]any{"name": fmt.Sprintf("key %d", i)}); status != http.StatusCreated {
				t.Fatalf("key %d of %d: %d %s", i+1, auth.MaxKeysPerUser, status, body)
			}
		}
		for _, caller := range []string{carol, adminKey} {
			status, body := e.call("POST", "/api/keys", caller, map[string]any{"name": "one more", "user_id": carolID})
			if status != http.StatusConflict {
				t.Fatalf("a key past the limit: %d %s, want 409", status, body)
			}
			wantDetail(t, body, fmt.Sprintf("The user has %d API keys, as many as allowed: delete one first", auth.MaxKeysPerUser))
		}
		var list []keyJSON
		e.must("GET", "/api/keys", carol, nil, http.StatusOK, &list)
		if len(list) != auth.MaxKeysPerUser {
			t.Fatalf("carol keeps %d keys, want %d", len(list), auth.MaxKeysPerUser)
		}
		e.must("DELETE", "/api/keys/"+list[len(list)-1].ID, carol, nil, http.StatusOK, nil)
		e.must("POST", "/api/keys", carol, map[string]any{"name": "in its place"}, http.StatusCreated, nil)
		// Other users are not held back by carol's keys.
		e.must("POST", "/api/keys", bob, map[string]any{"name": "bob's own"}, http.StatusCreated, nil)
	})

	t.Run("another user's key id is not found", func(t *testing.T) {
		e := e.in(t)
		status, body := e.call("DELETE", "/api/keys/"+created.ID, bob, nil)
		if status != http.StatusNotFound {
			t.Fatalf("bob deleting alice's key: %d %s, want 404", status, body)
		}
		if u := e.me(newKey); u.ID != aliceID {
			t.Fatal("alice's key stopped working")
		}
	})

	for _, tc := range []struct {
		name string
		key  string
		body any
		typ  string
		loc  []any
	}{
		{"expiry in the past", alice, map[string]any{"name": "old", "expires_at": time.Now().Add(-time.Minute).Format(time.RFC3339)}, "value_error", []any{"body", "expires_at"}},
		{"expiry not a date", alice, map[string]any{"name": "old", "expires_at": "soon"}, "", []any{"body", "expires_at"}},
		{"missing name", alice, map[string]any{}, "missing", []any{"body", "name"}},
		{"empty name", alice, map[string]any{"name": ""}, "string_too_short", []any{"body", "name"}},
		{"blank name", alice, map[string]any{"name": " \t "}, "value_error", []any{"body", "name"}},
		{"unknown field", alice, map[string]any{"name": "x", "scope": "all"}, "extra_forbidden", []any{"body", "scope"}},
		{"admin, unknown user", adminKey, map[string]any{"name": "x", "user_id": "nobody"}, "value_error", []any{"body", "user_id"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.in(t)
			status, body := e.call("POST", "/api/keys", tc.key, tc.body)
			wantProblem(t, status, body, tc.typ, tc.loc...)
		})
	}

	t.Run("rejected requests created no key", func(t *testing.T) {
		e := e.in(t)
		var list []keyJSON
		e.must("GET", "/api/keys", alice, nil, http.StatusOK, &list)
		if len(list) != 2 {
			t.Fatalf("alice has %d keys, want 2", len(list))
		}
	})

	t.Run("a deleted key stops working", func(t *testing.T) {
		e := e.in(t)
		var ok struct {
			Success bool `json:"success"`
		}
		e.must("DELETE", "/api/keys/"+created.ID, alice, nil, http.StatusOK, &ok)
		if !ok.Success {
			t.Fatal("delete did not answer success")
		}
		status, body := e.call("GET", "/api/v1/users/me", newKey, nil)
		if status != http.StatusUnauthorized || strings.TrimSpace(string(body)) != `{"detail":"Unauthorized"}` {
			t.Fatalf("deleted key answered %d %s, want 401", status, body)
		}
		if status, _ := e.call("DELETE", "/api/keys/"+created.ID, alice, nil); status != http.StatusNotFound {
			t.Fatalf("deleting it again answered %d, want 404", status)
		}
		var list []keyJSON
		e.must("GET", "/api/keys", alice, nil, http.StatusOK, &list)
		if len(list) != 1 || list[0].ID == created.ID {
			t.Fatalf("keys after delete: %+v", list)
		}
		e.me(alice) // the other key still works
	})

	t.Run("a key stops working when it expires", func(t *testing.T) {
		e := e.in(t)
		expires := time.Now().Add(1500 * time.Millisecond).UTC()
		var k keyJSON
		e.must("POST", "/api/keys", alice, map[string]any{"name": "short", "expires_at": expires.Format(time.RFC3339Nano)}, http.StatusCreated, &k)
		if k.ExpiresAt == nil || !k.ExpiresAt.Equal(expires) {
			t.Fatalf("expires_at %v, want %v", k.ExpiresAt, expires)
		}
		if u := e.me(*k.Key); u.ID != aliceID {
			t.Fatal("the key does not work before it expires")
		}
		e.eventually("key expiry", func() bool {
			status, _ := e.call("GET", "/api/v1/users/me", *k.Key, nil)
			return status == http.StatusUnauthorized
		})
		if time.Now().Before(expires) {
			t.Fatal("the key stopped working before its expiry")
		}
	})
}
