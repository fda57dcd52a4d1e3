// Package web is agentd's web app: server-rendered pages (html/template, so that whatever the
// agent wrote is escaped wherever it lands) with a small hand-written script, its assets
// embedded in the binary, served by agentd serve at /. People sign in with an API key, which
// becomes a session cookie; the pages read through the services, and every change goes
// through the JSON API with that cookie, so the app never does anything the API does not.
// A conversation's events are rendered here for people (Markdown, terminal output with its
// colours, diffs, the task list) and streamed to the page as server-rendered fragments.
package web
