package web_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/agentd/agentd/internal/sandbox/sandboxtest"
)

// The browser tests drive the app in a real headless Chromium (Debian's chromium, which
// make test installs). Without it they skip, and under CI they fail.

// updateScreenshots rewrites docs/screenshots/ from the pages the tests open; normal runs
// leave it alone. The environment variable AGENTD_UPDATE_SCREENSHOTS=1 does the same.
var updateScreenshots = flag.Bool("update-screenshots", false, "rewrite docs/screenshots/")

func screenshotsWanted() bool {
	return *updateScreenshots || os.Getenv("AGENTD_UPDATE_SCREENSHOTS") == "1"
}

// waitTimeout bounds one wait for a condition in the page; the machine may be busy.
const waitTimeout = 90 * time.Second

// chromium finds Debian's chromium.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	sandboxtest.Unavailable(t, "chromium is not installed (Debian: apt-get install chromium; make test installs it)")
	return ""
}

// browser is one headless Chromium with one tab, and what its pages reported.
type browser struct {
	t   *testing.T
	e   *env
	ctx context.Context

	mu       sync.Mutex
	problems []string // exceptions, CSP violations and console errors of the pages
}

// phone and desktop are the widths the app is made for.
const (
	phone   = 390
	desktop = 1280
)

func newBrowser(t *testing.T, e *env) *browser {
	t.Helper()
	exe := chromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
		chromedp.UserDataDir(t.TempDir()),
		// Chromium keeps its singleton socket in a directory of its own under TMPDIR, which
		// a browser that is killed leaves behind: the test's directory goes with the test.
		chromedp.Env("TMPDIR=" + t.TempDir()),
		chromedp.WindowSize(desktop, 900),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	b := &browser{t: t, e: e, ctx: ctx}
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// The first Run starts the browser; it must not have a timeout of its own.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	dialogs := make(chan struct{}, 8)
	if err := chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *page.EventJavascriptDialogOpening:
			dialogs <- struct{}{} // the app's confirmations: accepted
		default:
			_ = ev
		}
	}); err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			select {
			case <-dialogs:
				_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() {
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			// Exceptions, policy violations (the browser's security log) and errors the
			// script logs; a failed request (the network log, and an event stream the
			// browser gave up on, which the script opens again) is the test's to judge.
			if m.IsException() || (m.Type == chromedp.ConsoleError && m.Source != "network" &&
				!strings.HasPrefix(m.Text, "EventSource's response has")) {
				b.mu.Lock()
				b.problems = append(b.problems, m.String())
				b.mu.Unlock()
			}
		}
	}()
	return b
}

// do runs actions, bounded in time.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := b.try(actions...); err != nil {
		b.t.Fatalf("%s: %v%s", what, err, b.report())
	}
}

// try runs actions, bounded in time, and returns how they failed.
func (b *browser) try(actions ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(b.ctx, waitTimeout)
	defer cancel()
	return chromedp.Do(ctx, actions...)
}

// open navigates to a path of the app and waits for its main element. Chromium abandons a
// page load when the host's network interfaces change (net::ERR_NETWORK_CHANGED), which the
// tests of containers running beside these do: such a load is tried again, a few times.
func (b *browser) open(path string) {
	b.t.Helper()
	for attempt := 1; ; attempt++ {
		err := b.try(chromedp.Navigate(b.e.srv.URL+path), chromedp.WaitReady(chromedp.CSS("main")))
		if err == nil {
			return
		}
		if attempt == 3 || !strings.Contains(err.Error(), "ERR_NETWORK_CHANGED") {
			b.t.Fatalf("open %s: %v%s", path, err, b.report())
		}
	}
}

// waitFor waits until the JavaScript expression is true in the page, also across the
// page's reloads and navigations.
func (b *browser) waitFor(what, expr string) {
	b.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	var last error
	for {
		ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!(`+expr+`)`))
		cancel()
		if err == nil && ok {
			return
		}
		last = err
		if time.Now().After(deadline) {
			b.t.Fatalf("waiting for %s: not so after %v (last error: %v)%s", what, waitTimeout, last, b.report())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// press clicks the first element the selector matches once there is one and it is enabled.
// The status line's buttons are rendered again as events arrive, so a node found by one
// protocol call may be gone by the next: the page finds and clicks it in one step.
func (b *browser) press(what, sel string) {
	b.t.Helper()
	b.waitFor(what, `(() => { const el = document.querySelector(`+jsString(sel)+`); if (!el || el.disabled) return false; el.click(); return true })()`)
}

// eval evaluates a JavaScript expression into out.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, waitTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v%s", expr, err, b.report())
	}
	return v
}

// report is what the page said and what it shows, for a failure's message.
func (b *browser) report() string {
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText.slice(-3000)`))
	b.mu.Lock()
	defer b.mu.Unlock()
	return fmt.Sprintf("\npage problems: %q\npage: %s", b.problems, text)
}

// checkClean fails the test when a page threw, broke its policy or logged an error.
func (b *browser) checkClean() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.problems) > 0 {
		b.t.Fatalf("the pages reported problems: %q", b.problems)
	}
}

// signIn signs in through the form with key.
func (b *browser) signIn(key string) {
	b.t.Helper()
	b.open("/sign-in")
	b.do("sign in",
		chromedp.SendKeys(chromedp.CSS("#api_key"), key),
		chromedp.Click(chromedp.CSS(`form[action="/sign-in"] button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS("header.top")),
	)
}

// width sets the viewport's width, and the color scheme ("light" or "dark").
func (b *browser) view(width int64, scheme string) {
	b.t.Helper()
	mobile := width < 600
	b.do("set the view",
		chromedp.EmulateViewport(width, 900, func(p *emulation.SetDeviceMetricsOverrideParams, tp *emulation.SetTouchEmulationEnabledParams) {
			p.Mobile = mobile
			tp.Enabled = mobile
		}),
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
			return err
		}),
	)
}

// screenshot saves the viewport as docs/screenshots/<name>.png when asked to
// (-update-screenshots); it checks in every run that the page has no horizontal scroll.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	if over := eval[bool](b, `document.documentElement.scrollWidth > window.innerWidth + 1`); over {
		b.t.Errorf("%s: the page is wider than the screen (%d px > %d px)", name,
			eval[int](b, `document.documentElement.scrollWidth`), eval[int](b, `window.innerWidth`))
	}
	if !screenshotsWanted() {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, waitTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatal(err)
	}
	dir := filepath.Join("..", "..", "docs", "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// jsString quotes s for a JavaScript expression.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// textOf is the visible text of the elements a selector matches, joined.
func textOf(sel string) string {
	return `Array.from(document.querySelectorAll(` + jsString(sel) + `)).map(e => e.textContent).join("\n")`
}

func contains(expr, s string) string {
	return `(` + expr + `).includes(` + jsString(s) + `)`
}

var _ = strings.Contains
