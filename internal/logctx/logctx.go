// Package logctx carries log attributes in a context, so that every line logged for a
// request, or for the work it is about, names it: the request id, the conversation and the
// sandbox. Code logs with the Context variants of slog (InfoContext, ErrorContext, …) and a
// logger whose handler Handler wrapped.
package logctx

import (
	"context"
	"log/slog"
	"sync"
)

// set is the attributes of one context. Add changes it in place, so that attributes learnt
// deep in a request (the id of the conversation it created) reach the lines its middleware
// logs once the handler returns.
type set struct {
	mu    sync.Mutex
	attrs []slog.Attr
}

type key struct{}

// With returns a context whose log lines carry a set of attributes of its own: those of
// ctx, if any, and attrs.
func With(ctx context.Context, attrs ...slog.Attr) context.Context {
	s := &set{}
	if old := from(ctx); old != nil {
		s.attrs = old.list()
	}
	s.add(attrs)
	return context.WithValue(ctx, key{}, s)
}

// Add adds attrs to the set ctx carries, replacing those of the same keys; it does nothing
// when ctx carries none (see With).
func Add(ctx context.Context, attrs ...slog.Attr) {
	if s := from(ctx); s != nil {
		s.add(attrs)
	}
}

// Attrs returns the attributes ctx carries.
func Attrs(ctx context.Context) []slog.Attr {
	if s := from(ctx); s != nil {
		return s.list()
	}
	return nil
}

func from(ctx context.Context) *set {
	if ctx == nil {
		return nil
	}
	s, _ := ctx.Value(key{}).(*set)
	return s
}

func (s *set) add(attrs []slog.Attr) {
	s.mu.Lock()
	defer s.mu.Unlock()
next:
	for _, a := range attrs {
		for i := range s.attrs {
			if s.attrs[i].Key == a.Key {
				s.attrs[i] = a
				continue next
			}
		}
		s.attrs = append(s.attrs, a)
	}
}

func (s *set) list() []slog.Attr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]slog.Attr(nil), s.attrs...)
}

// Handler wraps h so that a record logged with a context carries the context's attributes,
// except those whose keys the logger or the record has already. Wrapping a Handler again
// returns it as it is.
func Handler(h slog.Handler) slog.Handler {
	if _, ok := h.(*handler); ok {
		return h
	}
	return &handler{next: h}
}

type handler struct {
	next slog.Handler
	// keys are those the logger's own attributes (WithAttrs) have.
	keys []string
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	attrs := Attrs(ctx)
	if len(attrs) == 0 {
		return h.next.Handle(ctx, r)
	}
	has := func(k string) bool {
		for _, hk := range h.keys {
			if hk == k {
				return true
			}
		}
		found := false
		r.Attrs(func(a slog.Attr) bool {
			found = a.Key == k
			return !found
		})
		return found
	}
	r = r.Clone()
	for _, a := range attrs {
		if !has(a.Key) {
			r.AddAttrs(a)
		}
	}
	return h.next.Handle(ctx, r)
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	keys := append([]string(nil), h.keys...)
	for _, a := range attrs {
		keys = append(keys, a.Key)
	}
	return &handler{next: h.next.WithAttrs(attrs), keys: keys}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{next: h.next.WithGroup(name), keys: h.keys}
}
