package logctx_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/logctx"
)

func newLogger() (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	h := slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}})
	return slog.New(logctx.Handler(logctx.Handler(h))), &buf
}

func TestHandler(t *testing.T) {
	log, buf := newLogger()
	for _, tc := range []struct {
		name string
		do   func()
		want string
	}{
		{"no attributes", func() { log.InfoContext(context.Background(), "plain") }, `level=INFO msg=plain`},
		{"a context's", func() {
			log.InfoContext(logctx.With(context.Background(), slog.String("request_id", "r1")), "served")
		}, `level=INFO msg=served request_id=r1`},
		{"added later, replacing", func() {
			ctx := logctx.With(context.Background(), slog.String("request_id", "r1"))
			logctx.Add(ctx, slog.String("conversation_id", "c1"), slog.String("request_id", "r2"))
			log.InfoContext(ctx, "created")
		}, `level=INFO msg=created request_id=r2 conversation_id=c1`},
		{"a derived set leaves its parent alone", func() {
			parent := logctx.With(context.Background(), slog.String("request_id", "r1"))
			child := logctx.With(parent, slog.String("sandbox_id", "s1"))
			logctx.Add(child, slog.String("conversation_id", "c1"))
			log.InfoContext(parent, "parent")
			log.InfoContext(child, "child")
		}, "level=INFO msg=parent request_id=r1\nlevel=INFO msg=child request_id=r1 sandbox_id=s1 conversation_id=c1"},
		{"the logger's and the record's own keys win", func() {
			ctx := logctx.With(context.Background(), slog.String("conversation_id", "c1"), slog.String("sandbox_id", "s1"), slog.String("request_id", "r1"))
			log.With("conversation_id", "c2").InfoContext(ctx, "own", "sandbox_id", "s2")
		}, `level=INFO msg=own conversation_id=c2 sandbox_id=s2 request_id=r1`},
		{"Add without a set does nothing", func() {
			ctx := context.Background()
			logctx.Add(ctx, slog.String("request_id", "r1"))
			log.InfoContext(ctx, "nothing")
		}, `level=INFO msg=nothing`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			buf.Reset()
			tc.do()
			if got := strings.TrimSpace(buf.String()); got != tc.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
