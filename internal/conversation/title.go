package conversation

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode"

	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/paging"
)

// Conversation titles. A conversation the user did not name is named after its first user
// message when its agent first runs, as OpenHands names its conversations: by the
// conversation's own model (TitlesModel), or by the start of the message (TitlesMessage).
// The title call runs beside the agent, bounded in time and tokens; its usage counts in the
// conversation's metrics like the agent's own calls. A call that fails or times out leaves the
// start of the message as the title; nothing about the title ever stops the agent. A title the
// user set is never replaced (Store.SetGeneratedTitle).

// Title modes (Options.Titles).
const (
	// TitlesOff keeps "Conversation <id>" until the user names the conversation.
	TitlesOff = "off"
	// TitlesMessage names a conversation after the start of its first message.
	TitlesMessage = "message"
	// TitlesModel has the conversation's model write the title.
	TitlesModel = "model"
)

const (
	// titleTimeout bounds the title call, retries included.
	titleTimeout = 30 * time.Second
	// titleMaxTokens caps the model's answer.
	titleMaxTokens = 48
	// titleMaxRunes caps a title; longer ones are cut at a word.
	titleMaxRunes = 80
	// titleFromMessageRunes is the length of a title made from the message.
	titleFromMessageRunes = 50
	// titlePromptRunes is how much of the message the model is shown.
	titlePromptRunes = 4000
)

const titleInstruction = "You name conversations between a user and a software agent. Reply with a title " +
	"for the conversation that starts with the user's message below: at most six words, in the " +
	"language of the message, saying what the user wants done. Reply with the title alone, without " +
	"quotes, a label or a final period."

// defaultTitle is the title of a conversation nobody named yet.
func defaultTitle(id string) string { return "Conversation " + id[:min(5, len(id))] }

// nameConversation starts naming the conversation after its first user message, unless it
// has a title already, titles are off, or it is being named. client is the conversation's
// model (nil when it has none), model its name; the call's usage goes into the
// conversation's live metrics.
func (s *Service) nameConversation(ownerID string, v View, client llm.Client, model string) {
	mode := s.o.Titles
	if mode == "" || mode == TitlesOff || v.TitleByUser || v.Title != defaultTitle(v.ID) {
		return
	}
	s.metricsMu.Lock()
	if s.titling[v.ID] {
		s.metricsMu.Unlock()
		return
	}
	s.titling[v.ID] = true
	s.metricsMu.Unlock()
	metrics, release := s.acquireMetrics(ownerID, v.ID, v.Metrics)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() {
			s.metricsMu.Lock()
			delete(s.titling, v.ID)
			s.metricsMu.Unlock()
		}()
		defer release()
		ctx, cancel := context.WithTimeout(s.ctx, titleTimeout)
		defer cancel()
		log := s.log.With("conversation_id", v.ID)
		text, err := s.firstUserText(ctx, ownerID, v.ID)
		if err != nil || strings.TrimSpace(text) == "" {
			if err != nil && s.ctx.Err() == nil {
				log.Warn("title: read the first message", "err", err)
			}
			return
		}
		title := ""
		if mode == TitlesModel && client != nil {
			resp, err := client.Complete(ctx, llm.Request{
				System:    titleInstruction,
				Messages:  []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{llm.TextPart(clip(text, titlePromptRunes))}}},
				MaxTokens: titleMaxTokens,
			})
			switch {
			case err == nil:
				metrics.Add(cmpOr(resp.Model, model), resp.Usage, resp.ResponseID)
				s.countedBeside(v.ID)
				title = cleanTitle(resp.Message.Text())
			case s.ctx.Err() != nil:
				return // shutting down: the next process names it
			default:
				log.Info("title: the model call failed; the conversation is named after its message", "err", err)
			}
		}
		if title == "" {
			title = titleFromMessage(text)
		}
		if title == "" {
			return
		}
		if _, err := s.o.Store.SetGeneratedTitle(context.WithoutCancel(ctx), ownerID, v.ID, title, s.o.Now().UTC()); err != nil && !errors.Is(err, ErrNotFound) {
			log.Warn("title: store", "err", err)
		}
	}()
}

// firstUserText is the text of the conversation's first user message; "" when it has none.
func (s *Service) firstUserText(ctx context.Context, ownerID, convID string) (string, error) {
	evs, _, err := s.o.Events.SearchEvents(ctx, ownerID,
		event.Filter{ConversationID: convID, Kind: event.KindMessage, Source: event.SourceUser}, false, paging.Query{Limit: 1})
	if err != nil || len(evs) == 0 {
		return "", err
	}
	b, err := event.Decode(evs[0])
	if err != nil {
		return "", err
	}
	m, ok := b.(*event.MessageEvent)
	if !ok {
		return "", nil
	}
	return strings.Join(m.Texts(), "\n"), nil
}

// cleanTitle makes a title of a model's answer: its first line, without quotes, a label,
// markup or a final period, its spaces collapsed, cut to titleMaxRunes.
func cleanTitle(s string) string {
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if l, r, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimSpace(strings.Trim(l, "*#_ ")), "title") {
			line = r
		}
		for prev := ""; prev != line; {
			prev = line
			line = strings.TrimRight(strings.Trim(line, " \t\"'`*_#“”‘’«»"), ".。")
		}
		return cut(strings.Join(strings.Fields(line), " "), titleMaxRunes)
	}
	return ""
}

// titleFromMessage is the start of the message, at a word, as a title.
func titleFromMessage(text string) string {
	return cut(strings.Join(strings.Fields(text), " "), titleFromMessageRunes)
}

// cut shortens s to at most n runes, at the last space if there is one in its second half,
// marking the cut with an ellipsis.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	r = r[:n-1]
	if i := strings.LastIndexFunc(string(r), unicode.IsSpace); i > len(string(r))/2 {
		r = []rune(string(r)[:i])
	}
	return strings.TrimRightFunc(string(r), func(c rune) bool { return unicode.IsSpace(c) || unicode.IsPunct(c) }) + "…"
}

// clip shortens s to at most n runes.
func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
