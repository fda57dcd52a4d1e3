package httpapi_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/auth"
)

// signIn signs in through the web app's form and returns the session cookie.
func (e *env) signIn(key string) *http.Cookie {
	e.t.Helper()
	req, err := http.NewRequest("POST", e.srv.URL+"/sign-in", strings.NewReader(url.Values{"api_key": {key}}.Encode()))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", e.srv.URL)
	c := *e.srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		e.t.Fatalf("sign in: status %d, want 303", resp.StatusCode)
	}
	for _, ck := range resp.Cookies() {
		if ck.Name == "agentd_session" {
			if !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode || ck.Path != "/" {
				e.t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Lax, Path=/", ck)
			}
			return ck
		}
	}
	e.t.Fatal("sign in set no session cookie")
	return nil
}

// withCookie sends a request with the session cookie and the given headers.
func (e *env) withCookie(method, path string, ck *http.Cookie, body string, headers map[string]string) (int, string) {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	req.AddCookie(ck)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestSessionCookieAuthenticatesTheAPI(t *testing.T) {
	e := newEnv(t)
	ck := e.signIn(adminKey)
	same := map[string]string{"Origin": e.srv.URL}

	for _, tt := range []struct {
		name    string
		method  string
		path    string
		body    string
		headers map[string]string
		want    int
	}{
		{"a read", "GET", "/api/v1/users/me", "", nil, http.StatusOK},
		{"a read from another site's page", "GET", "/api/v1/users/me", "", map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}, http.StatusOK},
		{"a change from this origin", "POST", "/api/v1/secrets", `{"name": "FROM_PAGE", "value": "value-123456"}`, same, http.StatusCreated},
		{"a change said same-origin by fetch metadata", "POST", "/api/v1/secrets", `{"name": "FROM_META", "value": "value-123456"}`, map[string]string{"Sec-Fetch-Site": "same-origin"}, http.StatusCreated},
		{"a change from another site", "POST", "/api/v1/secrets", `{"name": "FROM_EVIL", "value": "value-123456"}`, map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"a change another site's fetch metadata gives away", "POST", "/api/v1/secrets", `{"name": "FROM_EVIL", "value": "value-123456"}`, map[string]string{"Origin": e.srv.URL, "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"a change from a sibling site", "DELETE", "/api/v1/secrets/FROM_PAGE", "", map[string]string{"Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
		{"a change that says nothing of its origin", "POST", "/api/v1/secrets", `{"name": "FROM_NOWHERE", "value": "value-123456"}`, nil, http.StatusForbidden},
		{"a change with a wrong CSRF token", "POST", "/api/v1/secrets", `{"name": "FROM_PAGE2", "value": "value-123456"}`, map[string]string{"Origin": e.srv.URL, "X-CSRF-Token": "wrong"}, http.StatusForbidden},
		{"a change on the conversation API", "POST", "/agent-server/0123456789abcdef0123456789abcdef/api/conversations/0123456789abcdef0123456789abcdef/pause", "", same, http.StatusNotFound},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := e.in(t)
			status, body := e.withCookie(tt.method, tt.path, ck, tt.body, tt.headers)
			if status != tt.want {
				t.Fatalf("status %d, want %d: %s", status, tt.want, body)
			}
			if status == http.StatusForbidden && !strings.Contains(body, "detail") {
				t.Fatalf("a refusal without a detail: %s", body)
			}
		})
	}
	// Nothing a refused request asked for was done.
	var secrets struct {
		Items []struct {
			Name string `json:"name"`
		} `json:"items"`
	}
	e.must("GET", "/api/v1/secrets/search", adminKey, nil, http.StatusOK, &secrets)
	var names []string
	for _, s := range secrets.Items {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, ","); got != "FROM_META,FROM_PAGE" && got != "FROM_PAGE,FROM_META" {
		t.Fatalf("secrets after the requests: %s, want FROM_PAGE and FROM_META only", got)
	}

	// A key in a header wins over the cookie: the API's key auth is as before.
	if status, _ := e.withCookie("GET", "/api/v1/users/me", ck, "", map[string]string{"X-Session-API-Key": "wrong-key"}); status != http.StatusUnauthorized {
		t.Fatalf("a wrong key beside a good cookie: status %d, want 401", status)
	}
	// A cookie of no session is no identity.
	if status, _ := e.withCookie("GET", "/api/v1/users/me", &http.Cookie{Name: "agentd_session", Value: "forged"}, "", nil); status != http.StatusUnauthorized {
		t.Fatalf("a forged cookie: status %d, want 401", status)
	}
}

func TestSessionEnds(t *testing.T) {
	e := newEnv(t)
	_, key := e.newUser("casey")
	ck := e.signIn(key)
	if status, body := e.withCookie("GET", "/api/v1/users/me", ck, "", nil); status != http.StatusOK || !strings.Contains(body, "casey") {
		t.Fatalf("before: status %d: %s", status, body)
	}
	// Deleting the key the session was opened with ends it.
	var keys []struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	e.must("GET", "/api/keys", key, nil, http.StatusOK, &keys)
	e.must("DELETE", "/api/keys/"+keys[0].ID, key, nil, http.StatusOK, nil)
	if status, _ := e.withCookie("GET", "/api/v1/users/me", ck, "", nil); status != http.StatusUnauthorized {
		t.Fatalf("after the key was deleted: status %d, want 401", status)
	}

	// Signing out ends a session; it takes the session's CSRF token.
	ck = e.signIn(adminKey)
	if status, _ := e.withCookie("POST", "/sign-out", ck, "", map[string]string{"Origin": e.srv.URL}); status != http.StatusForbidden {
		t.Fatalf("sign out without the CSRF token: status %d, want 403", status)
	}
	if status, _ := e.withCookie("GET", "/api/v1/users/me", ck, "", nil); status != http.StatusOK {
		t.Fatalf("a refused sign-out ended the session: status %d", status)
	}
	form := url.Values{"csrf_token": {auth.CSRFToken(ck.Value)}}.Encode()
	status, _ := e.withCookie("POST", "/sign-out", ck, form, map[string]string{"Origin": e.srv.URL, "Content-Type": "application/x-www-form-urlencoded"})
	if status != http.StatusOK { // the redirect to the sign-in page, followed
		t.Fatalf("sign out: status %d", status)
	}
	if status, _ := e.withCookie("GET", "/api/v1/users/me", ck, "", nil); status != http.StatusUnauthorized {
		t.Fatalf("after signing out: status %d, want 401", status)
	}
}
