package apiclient

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"

	"github.com/agentd/agentd/internal/apitypes"
)

// Page asks for one page of a search: Limit items (0: the server's default) after the
// token PageID ("" for the first page).
type Page struct {
	PageID string
	Limit  int
}

func (p Page) query() url.Values {
	q := url.Values{}
	if p.PageID != "" {
		q.Set("page_id", p.PageID)
	}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	return q
}

// Me is the calling user.
func (c *Client) Me(ctx context.Context) (apitypes.CurrentUser, error) {
	var u apitypes.CurrentUser
	return u, c.Do(ctx, "GET", "/api/v1/users/me", nil, nil, &u)
}

// StartConversation starts a conversation; the answer is its start task.
func (c *Client) StartConversation(ctx context.Context, r apitypes.AppConversationStartRequest) (apitypes.AppConversationStartTask, error) {
	var t apitypes.AppConversationStartTask
	return t, c.Do(ctx, "POST", "/api/v1/app-conversations", nil, r, &t)
}

// StartTask is one start task; an unknown one is a 404 *Error.
func (c *Client) StartTask(ctx context.Context, id string) (apitypes.AppConversationStartTask, error) {
	var ts []*apitypes.AppConversationStartTask
	if err := c.Do(ctx, "GET", "/api/v1/app-conversations/start-tasks", url.Values{"ids": {id}}, nil, &ts); err != nil {
		return apitypes.AppConversationStartTask{}, err
	}
	if len(ts) == 0 || ts[0] == nil {
		return apitypes.AppConversationStartTask{}, &Error{Method: "GET", Path: "/api/v1/app-conversations/start-tasks", Status: 404, Detail: "no start task " + id}
	}
	return *ts[0], nil
}

// Conversation is one conversation; an unknown one is a 404 *Error.
func (c *Client) Conversation(ctx context.Context, id string) (apitypes.AppConversation, error) {
	var cs []*apitypes.AppConversation
	if err := c.Do(ctx, "GET", "/api/v1/app-conversations", url.Values{"ids": {id}}, nil, &cs); err != nil {
		return apitypes.AppConversation{}, err
	}
	if len(cs) == 0 || cs[0] == nil {
		return apitypes.AppConversation{}, &Error{Method: "GET", Path: "/api/v1/app-conversations", Status: 404, Detail: "no conversation " + id}
	}
	return *cs[0], nil
}

// Conversations pages through the caller's conversations, newest first.
func (c *Client) Conversations(ctx context.Context, p Page) (apitypes.AppConversationPage, error) {
	var page apitypes.AppConversationPage
	return page, c.Do(ctx, "GET", "/api/v1/app-conversations/search", p.query(), nil, &page)
}

// SendMessage sends the user's text to a conversation; the agent answers it.
func (c *Client) SendMessage(ctx context.Context, id, text string) error {
	r := apitypes.AppSendMessageRequest{Content: []apitypes.Content{{Text: &apitypes.TextContent{Type: "text", Text: text}}}}
	return c.Do(ctx, "POST", "/api/v1/app-conversations/"+url.PathEscape(id)+"/send-message", nil, r, nil)
}

// DeleteConversation deletes a conversation with its sandbox and events.
func (c *Client) DeleteConversation(ctx context.Context, id string) error {
	return c.Do(ctx, "DELETE", "/api/v1/app-conversations/"+url.PathEscape(id), nil, nil, nil)
}

// Events pages through a conversation's events in log order.
func (c *Client) Events(ctx context.Context, conversationID string, p Page) (apitypes.EventPage, error) {
	q := p.query()
	q.Set("conversation_id__eq", conversationID)
	var page apitypes.EventPage
	return page, c.Do(ctx, "GET", "/api/v1/events/search", q, nil, &page)
}

// Sandbox is one sandbox; an unknown one is a 404 *Error.
func (c *Client) Sandbox(ctx context.Context, id string) (apitypes.SandboxInfo, error) {
	var sbs []*apitypes.SandboxInfo
	if err := c.Do(ctx, "GET", "/api/v1/sandboxes", url.Values{"id": {id}}, nil, &sbs); err != nil {
		return apitypes.SandboxInfo{}, err
	}
	if len(sbs) == 0 || sbs[0] == nil {
		return apitypes.SandboxInfo{}, &Error{Method: "GET", Path: "/api/v1/sandboxes", Status: 404, Detail: "no sandbox " + id}
	}
	return *sbs[0], nil
}

// Sandboxes pages through the caller's sandboxes.
func (c *Client) Sandboxes(ctx context.Context, p Page) (apitypes.SandboxPage, error) {
	var page apitypes.SandboxPage
	return page, c.Do(ctx, "GET", "/api/v1/sandboxes/search", p.query(), nil, &page)
}

// StartSandbox starts a sandbox from spec ("" for the server's default); it answers while the
// sandbox is STARTING.
func (c *Client) StartSandbox(ctx context.Context, spec string) (apitypes.SandboxInfo, error) {
	q := url.Values{}
	if spec != "" {
		q.Set("sandbox_spec_id", spec)
	}
	var sb apitypes.SandboxInfo
	return sb, c.Do(ctx, "POST", "/api/v1/sandboxes", q, nil, &sb)
}

// PauseSandbox freezes a sandbox; ResumeSandbox thaws it; DeleteSandbox destroys it.
func (c *Client) PauseSandbox(ctx context.Context, id string) error {
	return c.Do(ctx, "POST", "/api/v1/sandboxes/"+url.PathEscape(id)+"/pause", nil, nil, nil)
}

// ResumeSandbox thaws a paused sandbox.
func (c *Client) ResumeSandbox(ctx context.Context, id string) error {
	return c.Do(ctx, "POST", "/api/v1/sandboxes/"+url.PathEscape(id)+"/resume", nil, nil, nil)
}

// DeleteSandbox destroys a sandbox.
func (c *Client) DeleteSandbox(ctx context.Context, id string) error {
	return c.Do(ctx, "DELETE", "/api/v1/sandboxes/"+url.PathEscape(id), nil, nil, nil)
}

// Specs pages through the sandbox specs.
func (c *Client) Specs(ctx context.Context, p Page) (apitypes.SandboxSpecInfoPage, error) {
	var page apitypes.SandboxSpecInfoPage
	return page, c.Do(ctx, "GET", "/api/v1/sandbox-specs/search", p.query(), nil, &page)
}

// CreateKey makes an API key; the answer holds the key, shown this once.
func (c *Client) CreateKey(ctx context.Context, r apitypes.APIKeyCreateRequest) (apitypes.APIKeyCreated, error) {
	var k apitypes.APIKeyCreated
	return k, c.Do(ctx, "POST", "/api/keys", nil, r, &k)
}

// Keys lists the keys of userID ("" for the caller).
func (c *Client) Keys(ctx context.Context, userID string) ([]apitypes.APIKeyInfo, error) {
	q := url.Values{}
	if userID != "" {
		q.Set("user_id", userID)
	}
	var ks []apitypes.APIKeyInfo
	return ks, c.Do(ctx, "GET", "/api/keys", q, nil, &ks)
}

// RevokeKey deletes a key of userID ("" for the caller).
func (c *Client) RevokeKey(ctx context.Context, userID, keyID string) error {
	q := url.Values{}
	if userID != "" {
		q.Set("user_id", userID)
	}
	return c.Do(ctx, "DELETE", "/api/keys/"+url.PathEscape(keyID), q, nil, nil)
}

// CreateUser adds a user (admins only).
func (c *Client) CreateUser(ctx context.Context, r apitypes.UserCreateRequest) (apitypes.UserInfo, error) {
	var u apitypes.UserInfo
	return u, c.Do(ctx, "POST", "/api/v1/users", nil, r, &u)
}

// Users pages through the users (admins only).
func (c *Client) Users(ctx context.Context, p Page) (apitypes.UserPage, error) {
	var page apitypes.UserPage
	return page, c.Do(ctx, "GET", "/api/v1/users/search", p.query(), nil, &page)
}

// Settings are the caller's settings as GET /api/settings answers them (secrets masked).
func (c *Client) Settings(ctx context.Context) (map[string]json.RawMessage, error) {
	var s map[string]json.RawMessage
	return s, c.Do(ctx, "GET", "/api/settings", nil, nil, &s)
}

// StoreSettings changes the settings named in s; the others keep their value.
func (c *Client) StoreSettings(ctx context.Context, s map[string]any) error {
	return c.Do(ctx, "POST", "/api/settings", nil, s, nil)
}

// CreateWebhook registers an endpoint; the answer holds its secret, shown this once.
func (c *Client) CreateWebhook(ctx context.Context, r apitypes.WebhookCreateRequest) (apitypes.WebhookCreated, error) {
	var w apitypes.WebhookCreated
	return w, c.Do(ctx, "POST", "/api/v1/webhooks", nil, r, &w)
}

// Webhooks lists the caller's webhooks.
func (c *Client) Webhooks(ctx context.Context) ([]apitypes.Webhook, error) {
	var ws []apitypes.Webhook
	return ws, c.Do(ctx, "GET", "/api/v1/webhooks", nil, nil, &ws)
}

// DeleteWebhook removes a webhook and its deliveries.
func (c *Client) DeleteWebhook(ctx context.Context, id string) error {
	return c.Do(ctx, "DELETE", "/api/v1/webhooks/"+url.PathEscape(id), nil, nil, nil)
}

// WebhookDeliveries pages through a webhook's deliveries, newest first; status "" for all.
func (c *Client) WebhookDeliveries(ctx context.Context, id, status string, p Page) (apitypes.WebhookDeliveryPage, error) {
	q := p.query()
	if status != "" {
		q.Set("status", status)
	}
	var page apitypes.WebhookDeliveryPage
	return page, c.Do(ctx, "GET", "/api/v1/webhooks/"+url.PathEscape(id)+"/deliveries", q, nil, &page)
}

// Redeliver sends a delivery again, with the same id.
func (c *Client) Redeliver(ctx context.Context, webhookID, deliveryID string) (apitypes.WebhookDelivery, error) {
	var d apitypes.WebhookDelivery
	return d, c.Do(ctx, "POST", "/api/v1/webhooks/"+url.PathEscape(webhookID)+"/deliveries/"+url.PathEscape(deliveryID)+"/redeliver", nil, nil, &d)
}

// LatestEvents are the conversation's newest n events, newest first.
func (c *Client) LatestEvents(ctx context.Context, conversationID string, n int) (apitypes.EventPage, error) {
	q := url.Values{"conversation_id__eq": {conversationID}, "sort_order": {"TIMESTAMP_DESC"}, "limit": {strconv.Itoa(n)}}
	var page apitypes.EventPage
	return page, c.Do(ctx, "GET", "/api/v1/events/search", q, nil, &page)
}

// agentPath is a conversation's path in the conversation API of its sandbox.
func agentPath(sandboxID, conversationID string) string {
	return "/agent-server/" + url.PathEscape(sandboxID) + "/api/conversations/" + url.PathEscape(conversationID)
}

// PauseAgent pauses the conversation's agent, interrupting the step in flight.
func (c *Client) PauseAgent(ctx context.Context, sandboxID, conversationID string) error {
	return c.Do(ctx, "POST", agentPath(sandboxID, conversationID)+"/pause", nil, nil, nil)
}

// RunAgent runs the conversation's agent (after a pause, an error or a message sent without
// run).
func (c *Client) RunAgent(ctx context.Context, sandboxID, conversationID string) error {
	return c.Do(ctx, "POST", agentPath(sandboxID, conversationID)+"/run", nil, nil, nil)
}

// All pages through a search from its first page until it ends, or until it has at least max
// items (0: no bound), and returns what it read.
func All[T any](max int, fetch func(p Page) (items []T, next *string, err error)) ([]T, error) {
	var out []T
	p := Page{Limit: 100}
	if max > 0 {
		p.Limit = min(max, 100)
	}
	for {
		items, next, err := fetch(p)
		if err != nil {
			return out, err
		}
		out = append(out, items...)
		if next == nil || (max > 0 && len(out) >= max) {
			if max > 0 && len(out) > max {
				out = out[:max]
			}
			return out, nil
		}
		p.PageID = *next
	}
}
