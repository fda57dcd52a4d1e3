package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestRowsStreamSendsWhatChangedBeforeIt: a conversation that changes between the list page
// and the start of its rows stream is rendered again as the stream starts; the change made
// no event the stream could have seen.
func TestRowsStreamSendsWhatChangedBeforeIt(t *testing.T) {
	e := newEnv(t)
	e.scripted(adminKey) // a model, which a conversation needs; this one is never asked
	var task struct {
		ID string `json:"id"`
	}
	e.must("POST", "/api/v1/app-conversations", adminKey, map[string]any{"title": "first title"}, http.StatusOK, &task)
	var convID string
	e.eventually("the conversation to start", func() bool {
		var tasks []struct {
			Status         string  `json:"status"`
			ConversationID *string `json:"app_conversation_id"`
		}
		e.must("GET", "/api/v1/app-conversations/start-tasks?ids="+task.ID, adminKey, nil, http.StatusOK, &tasks)
		if len(tasks) == 1 && tasks[0].Status == "READY" && tasks[0].ConversationID != nil {
			convID = *tasks[0].ConversationID
			return true
		}
		return false
	})

	// Signed in, as a browser is.
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Jar: jar}
	req, err := http.NewRequest("POST", e.srv.URL+"/sign-in", strings.NewReader(url.Values{"api_key": {adminKey}, "next": {"/conversations"}}.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", e.srv.URL)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page := readAll(t, resp)
	m := regexp.MustCompile(`data-live="([^"]+)"`).FindStringSubmatch(page)
	if resp.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("list page %d without a live URL:\n%s", resp.StatusCode, page)
	}
	live := html.UnescapeString(m[1])

	// A change that makes no event: only the row's version tells.
	e.must("PATCH", "/api/v1/app-conversations/"+convID, adminKey, map[string]any{"title": "second title"}, http.StatusOK, nil)

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	req, err = http.NewRequestWithContext(ctx, "GET", e.srv.URL+live, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var msg struct {
			Op     string `json:"op"`
			HTML   string `json:"html"`
			Target string `json:"target"`
		}
		if err := json.Unmarshal([]byte(data), &msg); err != nil {
			t.Fatal(err)
		}
		if msg.Target != "row-"+convID || !strings.Contains(msg.HTML, "second title") {
			t.Fatalf("first message of the stream: %+v, want the row with its new title", msg)
		}
		return
	}
	t.Fatalf("the stream ended (%v) without rendering the changed row", sc.Err())
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		b.WriteString(sc.Text())
		b.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
