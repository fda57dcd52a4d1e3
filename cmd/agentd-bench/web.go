package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/agentd/agentd/internal/app"
	"github.com/agentd/agentd/internal/store/sqlite"
)

// The web app's figures: what a browser downloads to open the app the first time (the
// conversations page with its stylesheet and script, as served: gzip), beside the same bytes
// uncompressed; and the time from opening a conversation's page with webEvents events to its
// last event shown, in headless Chromium, beside the same page served as a static file by a
// bare net/http server in the same run (the same compressed bytes: what remains is agentd's
// reading and rendering of the log).

// webEvents is the length of the conversation whose page is timed; webRounds how many times
// each page is opened.
const (
	webEvents = 1000
	webRounds = 15
)

// assetRE finds the stylesheet and the script a page links.
var assetRE = regexp.MustCompile(`(?:href|src)="(/assets/[^"]+\.(?:css|js))"`)

func benchWeb(ctx context.Context, s *server, dataDir string, progress func(string, ...any)) ([]row, []string, error) {
	progress("measuring the web app: first load, and a conversation of %d events", webEvents)
	cookie, err := s.signIn(ctx)
	if err != nil {
		return nil, nil, err
	}
	get := func(path string) (gz, plain []byte, err error) {
		req, err := http.NewRequestWithContext(ctx, "GET", s.url+path, nil)
		if err != nil {
			return nil, nil, err
		}
		req.AddCookie(cookie)
		req.Header.Set("Accept-Encoding", "gzip") // set by hand: the transport then leaves the body compressed
		resp, err := s.client.Do(req)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, nil, fmt.Errorf("GET %s: status %d", path, resp.StatusCode)
		}
		if resp.Header.Get("Content-Encoding") != "gzip" {
			return body, body, nil
		}
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, nil, err
		}
		plain, err = io.ReadAll(zr)
		return body, plain, err
	}

	// The first load: the page, its stylesheet and its script.
	var sent, whole int
	var parts []string
	_, page, err := get("/conversations")
	if err != nil {
		return nil, nil, err
	}
	for _, p := range append([]string{"/conversations"}, assetPaths(page)...) {
		gz, plain, err := get(p)
		if err != nil {
			return nil, nil, err
		}
		sent, whole = sent+len(gz), whole+len(plain)
		parts = append(parts, fmt.Sprintf("%s %.1f KiB (%.1f KiB uncompressed)", kind(p), float64(len(gz))/1024, float64(len(plain))/1024))
	}
	rows := []row{{figure: "first load of the web app (HTML, CSS and JS as sent, gzip)", agentd: float64(sent), primitive: float64(whole),
		unit: unitBytes, baseline: "the same files uncompressed"}}
	notes := []string{"the web app's first load: " + strings.Join(parts, ", ") + "."}

	// A conversation of webEvents events.
	sb, done, err := s.runningSandbox(ctx)
	defer done()
	if err != nil {
		return nil, nil, err
	}
	ids, err := s.seedConversationIDs(ctx, sb.ID, 1)
	if err != nil {
		return nil, nil, err
	}
	s.waitIdle()
	st, err := sqlite.Open(ctx, filepath.Join(dataDir, app.DBFile))
	if err != nil {
		return nil, nil, err
	}
	evs, err := fakeLog(ids[0], webEvents)
	if err == nil {
		err = st.AppendEvents(ctx, evs)
	}
	st.Close()
	if err != nil {
		return nil, nil, err
	}
	last := evs[len(evs)-2].ID // the last action: its observation is in its card
	path := "/conversations/" + ids[0]
	gz, plain, err := get(path)
	if err != nil {
		return nil, nil, err
	}
	rows = append(rows, row{figure: fmt.Sprintf("a conversation's page with %d events (HTML as sent, gzip)", webEvents),
		agentd: float64(len(gz)), primitive: float64(len(plain)), unit: unitBytes, baseline: "the same HTML uncompressed"})

	// The same page and its assets as static files of a bare server.
	static := map[string][]byte{"/page": gz}
	for _, p := range assetPaths(plain) {
		a, _, err := get(p)
		if err != nil {
			return nil, nil, err
		}
		static[p] = a
	}
	bare, err := serveStatic(static)
	if err != nil {
		return nil, nil, err
	}
	defer bare.Close()

	// The server's answer: the whole page read by a Go client.
	var served, bareServed []time.Duration
	for range webRounds {
		t := time.Now()
		if _, _, err := get(path); err != nil {
			return nil, nil, err
		}
		served = append(served, time.Since(t))
		t = time.Now()
		if err := fetch(ctx, s.client, bare.url+"/page"); err != nil {
			return nil, nil, err
		}
		bareServed = append(bareServed, time.Since(t))
	}
	rows = append(rows, timeRow(fmt.Sprintf("a conversation's page with %d events: the whole answer read (p50)", webEvents), 50, served, bareServed,
		"the same bytes from a bare net/http server"))

	// In a browser: opened to its last event shown.
	exe := findChromium()
	if exe == "" {
		notes = append(notes, "chromium was not found, so the time from opening a conversation's page to its last event shown was not measured (Debian: apt-get install chromium).")
		return rows, notes, nil
	}
	shown, bareShown, err := timePageInBrowser(ctx, exe, s.url, bare.url, cookie, path, last)
	if err != nil {
		return nil, nil, err
	}
	rows = append(rows,
		timeRow(fmt.Sprintf("a conversation's page with %d events: opened to its last event shown, Chromium (p50)", webEvents), 50, shown, bareShown,
			"the same page as a static file of a bare net/http server"),
		timeRow(fmt.Sprintf("a conversation's page with %d events: opened to its last event shown, Chromium (p99)", webEvents), 99, shown, bareShown,
			"the same"))
	notes = append(notes, fmt.Sprintf("a conversation's page is timed in headless Chromium from the start of its navigation to the second frame after its last event is in the document (performance.now), %d times each, alternating with the static copy.", webRounds))
	return rows, notes, nil
}

// assetPaths are the stylesheet and script a page links.
func assetPaths(page []byte) []string {
	var out []string
	for _, m := range assetRE.FindAllSubmatch(page, -1) {
		out = append(out, string(m[1]))
	}
	return out
}

func kind(path string) string {
	switch {
	case strings.HasSuffix(path, ".css"):
		return "CSS"
	case strings.HasSuffix(path, ".js"):
		return "JS"
	}
	return "HTML"
}

// signIn opens a session of the web app with the admin's key.
func (s *server) signIn(ctx context.Context) (*http.Cookie, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", s.url+"/sign-in", strings.NewReader(url.Values{"api_key": {s.key}}.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", s.url)
	resp, err := s.client.Transport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		if c.Name == "agentd_session" {
			return c, nil
		}
	}
	return nil, fmt.Errorf("sign in: status %d and no session cookie", resp.StatusCode)
}

// bareServer serves fixed bodies, compressed, as a static site would.
type bareServer struct {
	url string
	srv *http.Server
}

func (b *bareServer) Close() { b.srv.Close() }

func serveStatic(files map[string][]byte) (*bareServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		ct := "text/html; charset=utf-8"
		switch {
		case strings.HasSuffix(r.URL.Path, ".css"):
			ct = "text/css; charset=utf-8"
		case strings.HasSuffix(r.URL.Path, ".js"):
			ct = "text/javascript; charset=utf-8"
		}
		w.Header().Set("Content-Type", ct)
		if len(body) > 2 && body[0] == 0x1f && body[1] == 0x8b {
			w.Header().Set("Content-Encoding", "gzip")
		}
		w.Write(body)
	})
	b := &bareServer{url: "http://" + ln.Addr().String(), srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}
	go b.srv.Serve(ln)
	return b, nil
}

func fetch(ctx context.Context, c *http.Client, u string) error {
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

func findChromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// shownJS resolves, two frames after the element with id last is in the document, to the
// milliseconds since the navigation started.
const shownJS = `new Promise(resolve => {
	const done = () => requestAnimationFrame(() => requestAnimationFrame(() => resolve(performance.now())));
	if (document.getElementById(%q)) { done(); return; }
	new MutationObserver((_, o) => { if (document.getElementById(%q)) { o.disconnect(); done(); } })
		.observe(document, {childList: true, subtree: true});
})`

// timePageInBrowser opens the page of agentd and its static copy webRounds times each in
// headless Chromium, alternating.
func timePageInBrowser(ctx context.Context, exe, agentdURL, bareURL string, cookie *http.Cookie, path, lastID string) (agentd, bare []time.Duration, err error) {
	dir, err := os.MkdirTemp("", "agentd-bench-chromium-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(dir), chromedp.WindowSize(1280, 900),
		// Chromium's singleton socket, in a directory under TMPDIR, goes with dir too.
		chromedp.Env("TMPDIR="+dir),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true))
	defer cancelAlloc()
	bctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()
	// Sign the browser in with the session: the sign-in page, then the cookie's value.
	js := fmt.Sprintf(shownJS, "ev-"+lastID, "ev-"+lastID)
	if err := chromedp.Do(bctx, chromedp.Navigate(agentdURL+"/sign-in")); err != nil {
		return nil, nil, fmt.Errorf("chromium: %w", err)
	}
	if _, err := chromedp.Call(bctx, network.SetCookie, network.SetCookieParams{Name: cookie.Name, Value: cookie.Value, URL: agentdURL + "/"}); err != nil {
		return nil, nil, fmt.Errorf("chromium: set the session cookie: %w", err)
	}
	open := func(u string) (time.Duration, error) {
		rctx, cancel := context.WithTimeout(bctx, 2*time.Minute)
		defer cancel()
		if err := chromedp.Do(rctx, chromedp.Navigate(u)); err != nil {
			return 0, err
		}
		ms, err := chromedp.Run(rctx, chromedp.Evaluate[float64](js, chromedp.EvalAwaitPromise))
		if err != nil {
			return 0, err
		}
		return time.Duration(ms * float64(time.Millisecond)), nil
	}
	// One round of each first, unmeasured: the browser's own start-up.
	if _, err := open(agentdURL + path); err != nil {
		return nil, nil, fmt.Errorf("chromium: open the conversation: %w", err)
	}
	if _, err := open(bareURL + "/page"); err != nil {
		return nil, nil, fmt.Errorf("chromium: open the static copy: %w", err)
	}
	for range webRounds {
		d, err := open(agentdURL + path)
		if err != nil {
			return nil, nil, err
		}
		agentd = append(agentd, d)
		if d, err = open(bareURL + "/page"); err != nil {
			return nil, nil, err
		}
		bare = append(bare, d)
	}
	return agentd, bare, nil
}
