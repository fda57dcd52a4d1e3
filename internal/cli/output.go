package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// printJSON writes v as one line of JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// table writes rows under a header, columns aligned.
func table(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		for i := range r {
			r[i] = oneLine(r[i])
		}
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// oneLine keeps a table cell on one line, and not too wide.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 60 {
		s = string(r[:59]) + "…"
	}
	if s == "" {
		return "-"
	}
	return s
}

// ago says how long ago t was, as a person reads it in a table.
func ago(t time.Time, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return t.Local().Format("2006-01-02 15:04")
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return t.Local().Format("2006-01-02 15:04")
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// style colours text on a terminal and leaves it plain elsewhere (and with NO_COLOR set).
type style struct{ on bool }

func (a *app) style(w io.Writer) style {
	return style{on: a.env.Terminal(w) && a.env.Getenv("NO_COLOR") == ""}
}

func (s style) wrap(code, text string) string {
	if !s.on || text == "" {
		return text
	}
	return "\x1b[" + code + "m" + text + "\x1b[0m"
}

func (s style) bold(t string) string   { return s.wrap("1", t) }
func (s style) dim(t string) string    { return s.wrap("2", t) }
func (s style) red(t string) string    { return s.wrap("31", t) }
func (s style) green(t string) string  { return s.wrap("32", t) }
func (s style) yellow(t string) string { return s.wrap("33", t) }
func (s style) blue(t string) string   { return s.wrap("34", t) }
func (s style) cyan(t string) string   { return s.wrap("36", t) }

// status colours a status word by what it means.
func (s style) status(st string) string {
	switch strings.ToLower(st) {
	case "running", "ready", "finished", "delivered":
		return s.green(st)
	case "error", "stuck", "failed", "missing":
		return s.red(st)
	case "paused", "stopped", "waiting_for_confirmation", "pending":
		return s.yellow(st)
	case "starting", "working":
		return s.cyan(st)
	}
	return st
}

// jsonLines prints each item as one line of JSON.
func jsonLines[T any](w io.Writer, items []T) error {
	for _, it := range items {
		if err := printJSON(w, it); err != nil {
			return err
		}
	}
	return nil
}
