package httpapi

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/paging"
)

// What a current-generation client reads of a conversation besides its events: its
// trajectory as a zip, the skills its agent is given, and its lifecycle hooks.

// exportPage is how many events the trajectory download reads from the store at a time.
const exportPage = 200

// downloadAppConversation answers the conversation's trajectory as OpenHands' zip: meta.json
// (the conversation, without its session key and URL) and one event_<n>_<id>.json per event
// in log order. The zip is written as the events are read, so its size holds no memory and
// has no bound: agentd has none of OpenHands' export lock (409) or size limit (413). A
// failure once the answer has begun breaks the connection off, leaving no zip that looks
// whole.
func (a *API) downloadAppConversation(w http.ResponseWriter, r *http.Request) error {
	id, err := conversationIDFromPath(r)
	if err != nil {
		return err
	}
	ctx, owner := r.Context(), caller(r).ID
	v, err := a.d.Conversations.Get(ctx, owner, id)
	if err != nil {
		return err
	}
	f := event.Filter{ConversationID: id}
	evs, next, err := a.d.Conversations.SearchEvents(ctx, owner, f, false, paging.Query{Limit: exportPage})
	if err != nil {
		return err
	}
	meta := a.appConversation(v)
	meta.SessionAPIKey, meta.ConversationURL = nil, nil
	metaJSON, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/zip")
	w.Header().Set("Content-Disposition", `attachment; filename="conversation_`+id+`.zip"`)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	zw := zip.NewWriter(w)
	abort := func(err error) {
		a.log.Warn("trajectory download broken off", "conversation_id", id, "err", err)
		panic(http.ErrAbortHandler)
	}
	add := func(name string, body []byte, h zip.FileHeader) {
		h.Name, h.Method = name, zip.Deflate
		f, err := zw.CreateHeader(&h)
		if err == nil {
			_, err = f.Write(body)
		}
		if err != nil {
			abort(err)
		}
	}
	add("meta.json", metaJSON, zip.FileHeader{Modified: v.UpdatedAt})
	var buf bytes.Buffer
	for n := 0; ; {
		for _, e := range evs {
			buf.Reset()
			if err := json.Indent(&buf, e.Body, "", "  "); err != nil {
				abort(fmt.Errorf("event %s: %w", e.ID, err))
			}
			add(fmt.Sprintf("event_%06d_%s.json", n, e.ID), buf.Bytes(), zip.FileHeader{Modified: e.Timestamp})
			n++
		}
		if next == "" {
			break
		}
		if evs, next, err = a.d.Conversations.SearchEvents(ctx, owner, f, false, paging.Query{Cursor: next, Limit: exportPage}); err != nil {
			abort(err)
		}
	}
	if err := zw.Close(); err != nil {
		abort(err)
	}
	return nil
}

// appConversationSkills answers the skills the conversation's agent is given, from the set
// stored when it started: the workspace's and the user's, whatever the sandbox's state.
func (a *API) appConversationSkills(w http.ResponseWriter, r *http.Request) error {
	id, err := conversationIDFromPath(r)
	if err != nil {
		return err
	}
	skills, err := a.d.Conversations.Skills(r.Context(), caller(r).ID, id)
	if err != nil {
		return err
	}
	out := apitypes.ConversationSkills{Skills: make([]apitypes.ConversationSkill, len(skills))}
	for i, s := range skills {
		out.Skills[i] = apitypes.ConversationSkill{Name: s.Name, Type: apitypes.ConversationSkillType(skillType(s)), Content: s.Content, Triggers: orEmpty(s.Triggers)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// appConversationHooks answers the conversation's lifecycle hooks: none, for agentd runs
// none (OpenHands reads them from .openhands/hooks.json).
func (a *API) appConversationHooks(w http.ResponseWriter, r *http.Request) error {
	id, err := conversationIDFromPath(r)
	if err != nil {
		return err
	}
	if _, err := a.d.Conversations.Get(r.Context(), caller(r).ID, id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitypes.ConversationHooks{Hooks: []apitypes.HookEvent{}})
	return nil
}
