package httpapi

import (
	"fmt"
	"net/http"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/settings"
	"github.com/agentd/agentd/internal/webhook"
	"github.com/agentd/agentd/internal/wire"
)

// route is one endpoint: its description (for the mux and the OpenAPI document) and handler.
type route struct {
	op wire.Operation
	h  handler
}

// Errors every authenticated endpoint can answer with.
var authErrors = map[int]string{http.StatusUnauthorized: "Missing or wrong API key."}

func errs(more map[int]string) map[int]string {
	out := map[int]string{}
	for k, v := range authErrors {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

// providerTokenErrors are the answers of a token check that fails.
var providerTokenErrors = map[int]string{
	http.StatusUnauthorized: "Missing or wrong API key, or a provider refused its token (the detail names it); nothing was stored.",
	422:                     "A malformed body, or a provider host that cannot be used (malformed, plain http not allowed, no API there).",
	http.StatusBadGateway:   "A provider could not be reached or failed; nothing was stored.",
}

// providerErrors are the answers of calls to the caller's git providers.
var providerErrors = map[int]string{
	http.StatusUnauthorized: "Missing or wrong API key, no token stored for the provider, or the provider refused it.",
	403:                     "The provider's token may not do this.",
	404:                     "The provider has no such repository, or the token may not see it.",
	422:                     "A malformed query, repository name or provider host.",
	http.StatusBadGateway:   "A provider could not be reached or failed.",
}

// agentKeys are the keys the conversation API takes: the sandbox's session key, or its
// owner's API key.
const agentKeys = wire.UserKey | wire.SessionKey

// agentConv is the path of a conversation in the conversation API.
const agentConv = "/agent-server/{sandbox_id}/api/conversations/{conversation_id}"

// agentNotFound is the 404 of the conversation API.
var agentNotFound = map[int]string{404: "No such conversation in this sandbox, or no such sandbox of the caller's."}

func merge(a, b map[int]string) map[int]string {
	out := map[int]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// agentSandbox is the path of a sandbox's agent server API.
const agentSandbox = "/agent-server/{sandbox_id}/api"

// Errors of the workspace routes.
var (
	workspaceErrors = map[int]string{
		400: "The path leads out of the workspace (the detail says how), or names a directory where a file is expected.",
		404: "No such file or directory, or no such sandbox of the caller's.",
		409: "The sandbox is not RUNNING.",
	}
	appWorkspaceErrors = merge(workspaceErrors, map[int]string{
		404: "No such conversation of the caller's, or no such file or directory.",
		409: "The conversation is still starting, or its sandbox is not RUNNING.",
	})
)

// bashErrors are the answers of the bash routes.
var bashErrors = map[int]string{
	404: "No such sandbox of the caller's.",
	409: "The sandbox is not RUNNING.",
}

// routes is the whole route table.
func (a *API) routes() []route {
	notFound := map[int]string{404: "No such resource belongs to the caller."}
	return []route{
		// Health and the API description.
		{wire.Operation{Method: "GET", Path: "/alive", Tag: "health", Summary: "Liveness check", Public: true, Response: apitypes.AliveResponse{}}, a.alive},
		{wire.Operation{Method: "GET", Path: "/health", Tag: "health", Summary: "Health check: \"OK\" when the store answers and the sandbox backend works", Public: true, Response: "",
			Errors: map[int]string{503: "The store or the sandbox backend does not work; the body is a ReadinessResponse saying which"}}, a.health},
		{wire.Operation{Method: "GET", Path: "/ready", Tag: "health", Summary: "Readiness: whether the store answers and the sandbox backend works", Public: true, Response: apitypes.ReadinessResponse{},
			Errors: map[int]string{503: "The store or the sandbox backend does not work; the body says which"}}, a.readyz},
		{wire.Operation{Method: "GET", Path: "/server_info", Tag: "health", Summary: "The server's version and uptime", Public: true, Response: apitypes.ServerInfo{}}, a.serverInfo},
		{wire.Operation{Method: "GET", Path: "/openapi.json", Tag: "health", Summary: "This API's OpenAPI document", Public: true}, a.openAPI},
		{wire.Operation{Method: "GET", Path: "/metrics", Tag: "health", Summary: "The server's metrics, in Prometheus' text format (admins only; the admin listener serves them without a key)",
			RawResponse: "text/plain; version=0.0.4", Errors: errs(map[int]string{403: "The caller is not an admin."})}, a.metrics},

		// What the web app reads first, and the models it offers.
		{wire.Operation{Method: "GET", Path: "/api/v1/web-client/config", Tag: "config", Summary: "What the web app reads first: the app mode (oss) and its feature flags",
			Public: true, Response: apitypes.WebClientConfig{}}, a.webClientConfig},
		{wire.Operation{Method: "GET", Path: "/api/v1/config/models/search", Tag: "config", Summary: "Search the models to offer in llm_model: those agentd knows (verified), and the server's own",
			Query: apitypes.ModelSearchQuery{}, Response: apitypes.LLMModelPage{}, Errors: errs(nil)}, a.searchModels},
		{wire.Operation{Method: "GET", Path: "/api/v1/config/providers/search", Tag: "config", Summary: "Search the providers of those models; openai and anthropic, the protocols agentd speaks, are verified",
			Query: apitypes.ProviderSearchQuery{}, Response: apitypes.LLMProviderPage{}, Errors: errs(nil)}, a.searchProviders},
		{wire.Operation{Method: "GET", Path: "/api/v1/config/providers", Tag: "config", Summary: "The verified providers' names (the web app's list of providers): openai and anthropic",
			Response: []string{}, Errors: errs(nil)}, a.verifiedProviders},

		// Settings, current generation: the same stored settings as /api/settings, grouped.
		{wire.Operation{Method: "GET", Path: "/api/v1/settings", Tag: "settings", Summary: "The caller's settings, grouped as agent_settings and conversation_settings (secrets null)",
			Response: apitypes.SettingsV1{}, Errors: errs(map[int]string{404: "No settings stored yet."})}, a.getSettingsV1},
		{wire.Operation{Method: "POST", Path: "/api/v1/settings", Tag: "settings", Summary: "Change settings: agent_settings_diff and conversation_settings_diff merge into the stored ones",
			Body: apitypes.SettingsV1Update{}, Response: apitypes.MessageResponse{}, Errors: errs(map[int]string{
				422: "A malformed body, a setting agentd does not accept in a diff, a whole agent_settings or conversation_settings object, or an LLM base URL the URL policy refuses."})}, a.storeSettingsV1},
		{wire.Operation{Method: "GET", Path: "/api/v1/settings/agent-schema", Tag: "settings", Summary: "The agent settings agentd accepts, as OpenHands' settings pages read them",
			Response: apitypes.SettingsSchema{}, Errors: errs(nil)}, a.agentSettingsSchema},
		{wire.Operation{Method: "GET", Path: "/api/v1/settings/conversation-schema", Tag: "settings", Summary: "The conversation settings agentd accepts, as OpenHands' settings pages read them",
			Response: apitypes.SettingsSchema{}, Errors: errs(nil)}, a.conversationSettingsSchema},

		// LLM profiles.
		{wire.Operation{Method: "GET", Path: "/api/v1/settings/profiles", Tag: "settings", Summary: "The caller's LLM profiles (never their keys) and the active one",
			Response: apitypes.ProfileList{}, Errors: errs(nil)}, a.listProfiles},
		{wire.Operation{Method: "GET", Path: "/api/v1/settings/profiles/{name}", Tag: "settings", Summary: "One LLM profile (its key null)",
			Response: apitypes.ProfileDetail{}, Errors: errs(map[int]string{404: "No profile of that name.", 422: "A malformed name."})}, a.getProfile},
		{wire.Operation{Method: "POST", Path: "/api/v1/settings/profiles/{name}", Tag: "settings", Summary: "Save an LLM profile (its key sealed), replacing one of the same name",
			Body: apitypes.ProfileSaveRequest{}, Response: apitypes.ProfileMutation{}, Status: 201,
			Errors: errs(map[int]string{404: "No settings stored yet (to save the active LLM settings from).", 409: fmt.Sprintf("The caller has %d profiles.", settings.MaxProfiles),
				422: "A malformed name or body, or a base URL the URL policy refuses."})}, a.saveProfile},
		{wire.Operation{Method: "DELETE", Path: "/api/v1/settings/profiles/{name}", Tag: "settings", Summary: "Delete an LLM profile; deleting one that does not exist succeeds",
			Response: apitypes.ProfileMutation{}, Errors: errs(map[int]string{422: "A malformed name."})}, a.deleteProfile},
		{wire.Operation{Method: "POST", Path: "/api/v1/settings/profiles/{name}/activate", Tag: "settings", Summary: "Copy an LLM profile into the active LLM settings",
			Response: apitypes.ProfileActivated{}, Errors: errs(map[int]string{404: "No profile of that name.", 422: "A malformed name."})}, a.activateProfile},
		{wire.Operation{Method: "POST", Path: "/api/v1/settings/profiles/{name}/rename", Tag: "settings", Summary: "Rename an LLM profile, keeping its key and whether it is active",
			Body: apitypes.ProfileRenameRequest{}, Response: apitypes.ProfileMutation{},
			Errors: errs(map[int]string{404: "No profile of that name.", 409: "A profile has the new name.", 422: "A malformed name."})}, a.renameProfile},

		// Users and keys.
		{wire.Operation{Method: "GET", Path: "/api/v1/users/me", Tag: "users", Summary: "The calling user: their settings (secrets null unless exposed) and who they are",
			Query: apitypes.CurrentUserQuery{}, Response: apitypes.CurrentUser{}, Errors: errs(map[int]string{
				403: "expose_secrets=true without X-Session-API-Key set to the session key of one of the caller's sandboxes (the detail says what is wrong)."})}, a.me},
		{wire.Operation{Method: "GET", Path: "/api/v1/users/git-info", Tag: "users", Summary: "The caller's account at a git provider: login, name, email, avatar, company",
			Query: apitypes.GitInfoQuery{}, Response: apitypes.UserGitInfo{}, Errors: errs(providerErrors)}, a.gitInfo},
		{wire.Operation{Method: "POST", Path: "/api/v1/users", Tag: "users", Summary: "Create a user (admins only)", Body: apitypes.UserCreateRequest{}, Response: apitypes.UserInfo{}, Status: 201,
			Errors: errs(map[int]string{403: "The caller is not an admin.", 409: "The name is taken."})}, a.createUser},
		{wire.Operation{Method: "GET", Path: "/api/v1/users/search", Tag: "users", Summary: "List the users, oldest first (admins only)", Query: apitypes.PageQuery{}, Response: apitypes.UserPage{},
			Errors: errs(map[int]string{403: "The caller is not an admin."})}, a.searchUsers},
		{wire.Operation{Method: "POST", Path: "/api/keys", Tag: "users", Summary: "Create an API key; the key is shown only in this answer", Body: apitypes.APIKeyCreateRequest{}, Response: apitypes.APIKeyCreated{}, Status: 201,
			Errors: errs(map[int]string{403: "Only admins may create keys for other users.", 409: fmt.Sprintf("The user has as many keys as allowed (%d).", auth.MaxKeysPerUser)})}, a.createKey},
		{wire.Operation{Method: "GET", Path: "/api/keys", Tag: "users", Summary: "List API keys (never the keys themselves)", Query: apitypes.APIKeyListQuery{}, Response: []apitypes.APIKeyInfo{},
			Errors: errs(map[int]string{403: "Only admins may list other users' keys."})}, a.listKeys},
		{wire.Operation{Method: "DELETE", Path: "/api/keys/{key_id}", Tag: "users", Summary: "Delete an API key", Query: apitypes.APIKeyListQuery{}, Response: apitypes.Success{},
			Errors: errs(notFound)}, a.deleteKey},

		// Current generation: conversations and start tasks.
		{wire.Operation{Method: "POST", Path: "/api/v1/app-conversations", Tag: "app-conversations", Summary: "Start a conversation; answers at once with its start task",
			Body: apitypes.AppConversationStartRequest{}, Response: apitypes.AppConversationStartTask{}, Errors: errs(map[int]string{
				422: "A malformed body, or a selected_repository the caller's git provider tokens cannot reach.", http.StatusBadGateway: "The git provider could not be reached to check the repository."})}, a.startAppConversation},
		{wire.Operation{Method: "POST", Path: "/api/v1/app-conversations/stream-start", Tag: "app-conversations", Summary: "Start a conversation and follow its start: a JSON array of the start task's states, written as they are saved, until READY or ERROR",
			Description: "The array's first element is the task as created (WORKING); the answer stays open until the task is READY or ERROR. Leaving early does not stop the start.",
			Body:        apitypes.AppConversationStartRequest{}, Response: []apitypes.AppConversationStartTask{}, Errors: errs(map[int]string{
				422: "A malformed body, or a selected_repository the caller's git provider tokens cannot reach.", http.StatusBadGateway: "The git provider could not be reached to check the repository."})}, a.streamStartAppConversation},
		{wire.Operation{Method: "GET", Path: "/api/v1/app-conversations", Tag: "app-conversations", Summary: "Get conversations by id (null for unknown ids)",
			Query: apitypes.ConversationIDsQuery{}, Response: []*apitypes.AppConversation{}, Errors: errs(nil)}, a.batchGetAppConversations},
		{wire.Operation{Method: "GET", Path: "/api/v1/app-conversations/search", Tag: "app-conversations", Summary: "Search conversations, newest first",
			Query: apitypes.AppConversationSearchQuery{}, Response: apitypes.AppConversationPage{}, Errors: errs(nil)}, a.searchAppConversations},
		{wire.Operation{Method: "GET", Path: "/api/v1/app-conversations/count", Tag: "app-conversations", Summary: "Count conversations",
			Query: apitypes.AppConversationCountQuery{}, Response: 0, Errors: errs(nil)}, a.countAppConversations},
		{wire.Operation{Method: "GET", Path: "/api/v1/app-conversations/start-tasks", Tag: "app-conversations", Summary: "Get start tasks by id (null for unknown ids)",
			Query: apitypes.ConversationIDsQuery{}, Response: []*apitypes.AppConversationStartTask{}, Errors: errs(nil)}, a.batchGetStartTasks},
		{wire.Operation{Method: "GET", Path: "/api/v1/app-conversations/start-tasks/search", Tag: "app-conversations", Summary: "Search start tasks",
			Query: apitypes.StartTaskSearchQuery{}, Response: apitypes.AppConversationStartTaskPage{}, Errors: errs(nil)}, a.searchStartTasks},
		{wire.Operation{Method: "GET", Path: "/api/v1/app-conversations/start-tasks/count", Tag: "app-conversations", Summary: "Count start tasks",
			Query: apitypes.StartTaskCountQuery{}, Response: 0, Errors: errs(nil)}, a.countStartTasks},

		{wire.Operation{Method: "PATCH", Path: "/api/v1/app-conversations/{conversation_id}", Tag: "app-conversations", Summary: "Change a conversation's title, public flag, repository, branch or provider; absent or null fields stay",
			Body: apitypes.AppConversationUpdateRequest{}, Response: apitypes.AppConversation{}, Errors: errs(map[int]string{400: "The id is not a UUID.", 404: "No such conversation."})}, a.updateAppConversation},
		{wire.Operation{Method: "DELETE", Path: "/api/v1/app-conversations/{conversation_id}", Tag: "app-conversations", Summary: "Delete a conversation, its events and its sandbox",
			Response: apitypes.Success{}, Errors: errs(map[int]string{400: "The id is not a UUID.", 404: "No such conversation."})}, a.deleteAppConversation},
		{wire.Operation{Method: "POST", Path: "/api/v1/app-conversations/{conversation_id}/send-message", Tag: "app-conversations", Summary: "Send a user message to a conversation whose sandbox runs; with run (the default) the agent answers it",
			Body: apitypes.AppSendMessageRequest{}, Response: apitypes.AppSendMessageResponse{}, Errors: errs(map[int]string{
				400: "The id is not a UUID.", 404: "No such conversation.",
				409: "The sandbox is not RUNNING (resume it first), or the conversation is still starting.",
				410: "The conversation is archived: its sandbox no longer exists.",
				503: "The sandbox is in ERROR, or the conversation failed to start."})}, a.sendAppMessage},
		{wire.Operation{Method: "GET", Path: "/api/v1/app-conversations/{conversation_id}/events/stream", Tag: "app-conversations",
			Summary: "Follow a conversation's events as Server-Sent Events: its full state, the events after the one named (all of them when none is), then each event as it is stored",
			Description: "Each event is a data line with the event's JSON; stored events carry their id as the SSE id, so that a client that reconnects with Last-Event-ID (or after_event_id) gets every later event once, in order, also after a restart of the server. " +
				"The first event is a ConversationStateUpdateEvent full_state (not stored, no SSE id). Comments keep an idle stream open. A stream that ends for a reason the client should know ends with an event named close, whose data is {\"reason\": lagged | deleted | shutdown | error, \"detail\": ...}.",
			Query: apitypes.EventStreamQuery{}, Response: "", ResponseType: "text/event-stream", Errors: errs(map[int]string{
				400: "The id is not a UUID, or Last-Event-ID names no event of this conversation.", 404: "No such conversation.",
				422: "after_event_id names no event of this conversation.", 429: "The conversation has as many live streams open as allowed (stream_max_subscribers).",
				503: "The server is shutting down."})}, a.eventStream},
		{wire.Operation{Method: "POST", Path: "/api/v1/conversations/{conversation_id}/pending-messages", Tag: "app-conversations", Summary: "Queue a user message until the conversation is READY (sent at once when it is); the id may be the start task's",
			Body: apitypes.PendingMessageRequest{}, Response: apitypes.PendingMessageResponse{}, Status: 201, Errors: errs(map[int]string{
				400: "The id is not a UUID (bare or after task-).", 404: "No such conversation or start task.",
				429: fmt.Sprintf("As many messages as allowed (%d) wait already.", conversation.MaxPendingMessages)})}, a.queuePendingMessage},

		// Git provider tokens, current generation (the same as the V0 endpoints).
		{wire.Operation{Method: "POST", Path: "/api/v1/secrets/git-providers", Tag: "secrets", Summary: "Check git provider tokens with their providers and store them (sealed; never returned)",
			Body: apitypes.POSTProviderModel{}, Response: apitypes.MessageResponse{}, Errors: errs(providerTokenErrors)}, a.addGitProviders},
		{wire.Operation{Method: "DELETE", Path: "/api/v1/secrets/git-providers", Tag: "secrets", Summary: "Remove all stored git provider tokens",
			Response: apitypes.MessageResponse{}, Errors: errs(nil)}, a.unsetProviderTokens},

		// Sandboxes and specs.
		{wire.Operation{Method: "GET", Path: "/api/v1/sandboxes/search", Tag: "sandboxes", Summary: "List sandboxes, newest first",
			Query: apitypes.PageQuery{}, Response: apitypes.SandboxPage{}, Errors: errs(nil)}, a.searchSandboxes},
		{wire.Operation{Method: "GET", Path: "/api/v1/sandboxes", Tag: "sandboxes", Summary: "Get sandboxes by id (null for unknown ids)",
			Query: apitypes.IDsQuery{}, Response: []*apitypes.SandboxInfo{}, Errors: errs(nil)}, a.batchGetSandboxes},
		{wire.Operation{Method: "POST", Path: "/api/v1/sandboxes", Tag: "sandboxes", Summary: "Start a sandbox from a spec (the default spec when none is named)",
			Query: apitypes.SandboxStartQuery{}, Response: apitypes.SandboxInfo{}, Errors: errs(map[int]string{429: "The caller runs as many sandboxes as allowed.",
				503: "The backend could not start the sandbox, or its runtime did not answer within the start timeout: the detail names the sandbox, left in ERROR, and says what happened."})}, a.startSandbox},
		{wire.Operation{Method: "POST", Path: "/api/v1/sandboxes/{sandbox_id}/pause", Tag: "sandboxes", Summary: "Pause a sandbox: freeze all its processes",
			Response: apitypes.Success{}, Errors: errs(map[int]string{404: "No such sandbox.", 409: "The sandbox is neither RUNNING nor PAUSED (a PAUSED one answers success)."})}, a.pauseSandbox},
		{wire.Operation{Method: "POST", Path: "/api/v1/sandboxes/{sandbox_id}/resume", Tag: "sandboxes", Summary: "Resume a paused sandbox",
			Response: apitypes.Success{}, Errors: errs(map[int]string{404: "No such sandbox.", 409: "The sandbox is neither PAUSED nor RUNNING (a RUNNING one answers success).", 429: "The caller runs as many sandboxes as allowed.",
				503: "The backend could not resume the sandbox, or its runtime did not answer within the start timeout (the sandbox is paused again, or MISSING when its processes are gone); or the sandbox lives on another node. The detail says which."})}, a.resumeSandbox},
		{wire.Operation{Method: "DELETE", Path: "/api/v1/sandboxes/{sandbox_id}", Tag: "sandboxes", Summary: "Delete a sandbox: kill its processes and remove its files",
			Response: apitypes.Success{}, Errors: errs(map[int]string{404: "No such sandbox."})}, a.deleteSandbox},
		{wire.Operation{Method: "GET", Path: sandboxSettingsPrefix + "secrets", Keys: wire.SessionKey, Tag: "sandboxes",
			Summary:     "The secrets the sandbox's conversations were given: names and descriptions",
			Description: "Takes the sandbox's session key only, never a user's API key.",
			Response:    apitypes.SecretNamesResponse{}, Errors: map[int]string{401: "Missing key, or not this sandbox's session key."}}, a.listSandboxSecrets},
		{wire.Operation{Method: "GET", Path: sandboxSettingsPrefix + "secrets/{secret_name}", Keys: wire.SessionKey, Tag: "sandboxes",
			Summary:     "The value of a secret the sandbox's conversations were given, as text",
			Description: "Takes the sandbox's session key only, never a user's API key.",
			Response:    "", ResponseType: "text/plain",
			Errors: map[int]string{401: "Missing key, or not this sandbox's session key.", 404: "The sandbox's conversations were given no secret of that name."}}, a.getSandboxSecret},
		{wire.Operation{Method: "GET", Path: "/api/v1/sandbox-specs/search", Tag: "sandbox-specs", Summary: "List sandbox specs",
			Query: apitypes.PageQuery{}, Response: apitypes.SandboxSpecInfoPage{}, Errors: errs(nil)}, a.searchSpecs},
		{wire.Operation{Method: "GET", Path: "/api/v1/sandbox-specs", Tag: "sandbox-specs", Summary: "Get sandbox specs by id (null for unknown ids)",
			Query: apitypes.IDsQuery{}, Response: []*apitypes.SandboxSpecInfo{}, Errors: errs(nil)}, a.batchGetSpecs},

		// The caller's own skills.
		{wire.Operation{Method: "POST", Path: "/api/v1/skills", Tag: "skills", Summary: "Create a skill; every conversation the caller starts is given it",
			Body: apitypes.SkillCreateRequest{}, Response: apitypes.SkillInfo{}, Status: 201,
			Errors: errs(map[int]string{409: "The caller has a skill of that name, or as many skills as allowed."})}, a.createSkill},
		{wire.Operation{Method: "GET", Path: "/api/v1/skills/search", Tag: "skills", Summary: "List the caller's skills, oldest first",
			Query: apitypes.PageQuery{}, Response: apitypes.SkillPage{}, Errors: errs(nil)}, a.searchSkills},
		{wire.Operation{Method: "GET", Path: "/api/v1/skills/{name}", Tag: "skills", Summary: "Get one of the caller's skills",
			Response: apitypes.SkillInfo{}, Errors: errs(map[int]string{404: "The caller has no skill of that name."})}, a.getSkill},
		{wire.Operation{Method: "PUT", Path: "/api/v1/skills/{name}", Tag: "skills", Summary: "Replace a skill's content, triggers and description",
			Body: apitypes.SkillUpdateRequest{}, Response: apitypes.SkillInfo{}, Errors: errs(map[int]string{404: "The caller has no skill of that name."})}, a.updateSkill},
		{wire.Operation{Method: "DELETE", Path: "/api/v1/skills/{name}", Tag: "skills", Summary: "Delete a skill",
			Response: apitypes.Success{}, Errors: errs(map[int]string{404: "The caller has no skill of that name."})}, a.deleteSkill},
		// Webhooks: endpoints agentd tells about conversations and sandboxes, with signed deliveries.
		{wire.Operation{Method: "POST", Path: "/api/v1/webhooks", Tag: "webhooks", Summary: "Register a webhook; its signing secret is shown only in this answer",
			Body: apitypes.WebhookCreateRequest{}, Response: apitypes.WebhookCreated{}, Status: 201,
			Errors: errs(map[int]string{409: fmt.Sprintf("The caller has as many webhooks as allowed (%d).", webhook.MaxPerUser),
				422: "A malformed body, an unknown kind, a conversation the caller does not have, or a URL the URL policy refuses."})}, a.createWebhook},
		{wire.Operation{Method: "GET", Path: "/api/v1/webhooks", Tag: "webhooks", Summary: "The caller's webhooks, oldest first (never their secrets)",
			Response: []apitypes.Webhook{}, Errors: errs(nil)}, a.listWebhooks},
		{wire.Operation{Method: "GET", Path: "/api/v1/webhooks/{webhook_id}", Tag: "webhooks", Summary: "One webhook (never its secret)",
			Response: apitypes.Webhook{}, Errors: errs(notFound)}, a.getWebhook},
		{wire.Operation{Method: "DELETE", Path: "/api/v1/webhooks/{webhook_id}", Tag: "webhooks", Summary: "Delete a webhook with its deliveries; pending ones are not sent",
			Response: apitypes.Success{}, Errors: errs(notFound)}, a.deleteWebhook},
		{wire.Operation{Method: "GET", Path: "/api/v1/webhooks/{webhook_id}/deliveries", Tag: "webhooks", Summary: "A webhook's recent deliveries, newest first, with their status and last response code",
			Query: apitypes.WebhookDeliveryQuery{}, Response: apitypes.WebhookDeliveryPage{}, Errors: errs(notFound)}, a.listDeliveries},
		{wire.Operation{Method: "POST", Path: "/api/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver", Tag: "webhooks",
			Summary: "Send a delivery again, with the same delivery id, retried as a new one", Response: apitypes.WebhookDelivery{}, Status: 202,
			Errors: errs(notFound)}, a.redeliver},

		// Custom secrets: named values the agent's commands get as environment variables.
		{wire.Operation{Method: "POST", Path: "/api/v1/secrets", Tag: "secrets", Summary: "Create a secret (sealed; its value is never returned)",
			Body: apitypes.CustomSecretCreate{}, Response: apitypes.MessageResponse{}, Status: 201,
			Errors: errs(map[int]string{409: "The caller has a secret of that name."})}, a.createSecret},
		{wire.Operation{Method: "GET", Path: "/api/v1/secrets/search", Tag: "secrets", Summary: "List secrets by name: names and descriptions, never values",
			Query: apitypes.CustomSecretSearchQuery{}, Response: apitypes.CustomSecretPage{}, Errors: errs(nil)}, a.searchSecrets},
		{wire.Operation{Method: "PUT", Path: "/api/v1/secrets/{secret_id}", Tag: "secrets", Summary: "Change a secret's name, description or value; the id is its name",
			Body: apitypes.CustomSecretUpdate{}, Response: apitypes.MessageResponse{},
			Errors: errs(map[int]string{404: "No such secret.", 409: "The new name is another secret's."})}, a.updateSecret},
		{wire.Operation{Method: "DELETE", Path: "/api/v1/secrets/{secret_id}", Tag: "secrets", Summary: "Delete a secret; conversations that named it no longer get it",
			Response: apitypes.MessageResponse{}, Errors: errs(map[int]string{404: "No such secret."})}, a.deleteSecret},

		// Events of all the caller's conversations.
		{wire.Operation{Method: "GET", Path: "/api/v1/events/search", Tag: "events", Summary: "Search the events of the caller's conversations, in log order",
			Query: apitypes.EventSearchQuery{}, Response: apitypes.EventPage{}, Errors: errs(nil)}, a.searchEvents},
		{wire.Operation{Method: "GET", Path: "/api/v1/events/count", Tag: "events", Summary: "Count the events of the caller's conversations",
			Query: apitypes.EventCountQuery{}, Response: 0, Errors: errs(nil)}, a.countEvents},
		{wire.Operation{Method: "GET", Path: "/api/v1/events", Tag: "events", Summary: "Get events by id (null for unknown ids)",
			Query: apitypes.IDsQuery{}, Response: []*apitypes.Event{}, Errors: errs(nil)}, a.batchGetEvents},

		// Events of one conversation, at the current generation's paths.
		{wire.Operation{Method: "GET", Path: "/api/v1/conversation/{conversation_id}/events/search", Tag: "events", Summary: "Search a conversation's events, in log order (none for a conversation the caller does not have)",
			Query: apitypes.ConversationEventsSearchQuery{}, Response: apitypes.EventPage{}, Errors: errs(map[int]string{400: "Malformed conversation id."})}, a.searchConversationEvents},
		{wire.Operation{Method: "GET", Path: "/api/v1/conversation/{conversation_id}/events/count", Tag: "events", Summary: "Count a conversation's events",
			Query: apitypes.ConversationEventsCountQuery{}, Response: 0, Errors: errs(map[int]string{400: "Malformed conversation id."})}, a.countConversationEvents},
		{wire.Operation{Method: "GET", Path: "/api/v1/conversation/{conversation_id}/events", Tag: "events", Summary: "Get a conversation's events by id (null for unknown ids and other conversations' events)",
			Query: apitypes.IDsQuery{}, Response: []*apitypes.Event{}, Errors: errs(map[int]string{400: "Malformed conversation id."})}, a.batchGetConversationEvents},

		// The conversation API, at each conversation's conversation_url.
		{wire.Operation{Method: "GET", Path: "/agent-server/{sandbox_id}/alive", Tag: "conversation-api", Summary: "Liveness of a sandbox's conversation API",
			Public: true, Response: apitypes.AliveResponse{}}, a.agentServerAlive},
		{wire.Operation{Method: "GET", Path: agentConv, Keys: agentKeys, Tag: "conversation-api", Summary: "Get a conversation with its agent's status",
			Response: apitypes.AgentConversationInfo{}, Errors: errs(agentNotFound)}, a.getAgentConversation},
		{wire.Operation{Method: "POST", Path: agentConv + "/events", Keys: agentKeys, Tag: "conversation-api", Summary: "Send a user message; with run, the agent answers it",
			Body: apitypes.SendMessageRequest{}, Response: apitypes.Success{}, Errors: errs(agentNotFound)}, a.sendAgentMessage},
		{wire.Operation{Method: "GET", Path: agentConv + "/events/search", Keys: agentKeys, Tag: "conversation-api", Summary: "Search the conversation's events, in log order",
			Query: apitypes.ConversationEventSearchQuery{}, Response: apitypes.EventPage{}, Errors: errs(agentNotFound)}, a.searchAgentEvents},
		{wire.Operation{Method: "GET", Path: agentConv + "/events/count", Keys: agentKeys, Tag: "conversation-api", Summary: "Count the conversation's events",
			Query: apitypes.ConversationEventCountQuery{}, Response: 0, Errors: errs(agentNotFound)}, a.countAgentEvents},
		{wire.Operation{Method: "GET", Path: agentConv + "/events/{event_id}", Keys: agentKeys, Tag: "conversation-api", Summary: "Get one event",
			Response: apitypes.Event{}, Errors: errs(agentNotFound)}, a.getAgentEvent},
		{wire.Operation{Method: "GET", Path: agentConv + "/agent_final_response", Keys: agentKeys, Tag: "conversation-api", Summary: "The agent's last answer: its last finish message or agent message",
			Response: apitypes.AgentFinalResponse{}, Errors: errs(agentNotFound)}, a.agentFinalResponse},
		{wire.Operation{Method: "POST", Path: agentConv + "/run", Keys: agentKeys, Tag: "conversation-api", Summary: "Run the agent",
			Response: apitypes.Success{}, Errors: errs(merge(agentNotFound, map[int]string{409: "The agent is already running, or the conversation is still starting."}))}, a.runAgent},
		{wire.Operation{Method: "POST", Path: agentConv + "/pause", Keys: agentKeys, Tag: "conversation-api", Summary: "Pause the agent, interrupting the step in flight; success too when nothing runs",
			Response: apitypes.Success{}, Errors: errs(agentNotFound)}, a.pauseAgent},
		// OpenHands' pause waits for the step in flight and its interrupt cuts it off; agentd's
		// pause cuts it off already, so both are one.
		{wire.Operation{Method: "POST", Path: agentConv + "/interrupt", Keys: agentKeys, Tag: "conversation-api", Summary: "Interrupt the agent: the model call or command in flight is cut off and the agent paused; success too when nothing runs",
			Response: apitypes.Success{}, Errors: errs(agentNotFound)}, a.pauseAgent},
		{wire.Operation{Method: "POST", Path: agentConv + "/secrets", Keys: agentKeys, Tag: "conversation-api", Summary: "Give the conversation more secrets, which the agent's commands get as environment variables (values sealed, never shown)",
			Description: "Each secret is a value, a StaticSecret, or a LookupSecret naming a secret of the sandbox (…/api/settings/secrets/{name}); a name the conversation has takes the new secret.",
			Body:        apitypes.ConversationSecretsRequest{}, Response: apitypes.Success{}, Errors: errs(merge(agentNotFound, map[int]string{
				422: "A malformed body, a bad name or value, a LookupSecret of another URL, or one naming a secret the sandbox's conversations were not given (the detail says which; it never quotes a value)."}))}, a.setAgentSecrets},
		{wire.Operation{Method: "POST", Path: agentConv + "/confirmation_policy", Keys: agentKeys, Tag: "conversation-api", Summary: "Set which of the agent's actions wait for the user's confirmation",
			Body: apitypes.SetConfirmationPolicyRequest{}, Response: apitypes.Success{}, Errors: errs(agentNotFound)}, a.setConfirmationPolicy},
		{wire.Operation{Method: "POST", Path: agentConv + "/events/respond_to_confirmation", Keys: agentKeys, Tag: "conversation-api", Summary: "Accept the actions waiting for confirmation (they run), or reject them with a reason the agent reads",
			Body: apitypes.ConfirmationResponseRequest{}, Response: apitypes.Success{}, Errors: errs(merge(agentNotFound, map[int]string{409: "No action is waiting for confirmation, or the conversation is still starting."}))}, a.respondToConfirmation},

		// The workspace, without the agent: at the agent server's paths, and the current
		// generation's per conversation.
		{op: wire.Operation{Method: "GET", Path: agentSandbox + "/file/list", Keys: agentKeys, Tag: "workspace", Summary: "List a directory of the workspace (agentd's own route)",
			Query: runtimeclient.FileListQuery{}, Response: runtimeclient.FilePage{}, Errors: errs(workspaceErrors)}, h: a.agentServerWorkspace(runtimeclient.RouteFileList)},
		{op: wire.Operation{Method: "GET", Path: agentSandbox + "/file/download", Keys: agentKeys, Tag: "workspace", Summary: "Download a file of the workspace",
			Query: runtimeclient.FileQuery{}, RawResponse: "application/octet-stream", Errors: errs(workspaceErrors)}, h: a.agentServerWorkspace(runtimeclient.RouteFileDownload)},
		{op: wire.Operation{Method: "POST", Path: agentSandbox + "/file/upload", Keys: agentKeys, Tag: "workspace", Summary: "Upload a file into the workspace, making its parent directories",
			Query: runtimeclient.FileQuery{}, FileField: "file", Response: apitypes.Success{},
			Errors: errs(merge(workspaceErrors, map[int]string{413: "The file is larger than the server's bound (max_upload_mb)."}))}, h: a.agentServerWorkspace(runtimeclient.RouteFileUpload)},
		{op: wire.Operation{Method: "GET", Path: agentSandbox + "/file/archive", Keys: agentKeys, Tag: "workspace", Summary: "Download a directory of the workspace as a tar.gz archive",
			Query: runtimeclient.ArchiveQuery{}, RawResponse: "application/gzip", Errors: errs(workspaceErrors)}, h: a.agentServerWorkspace(runtimeclient.RouteFileArchive)},
		{op: wire.Operation{Method: "GET", Path: agentSandbox + "/git/changes", Keys: agentKeys, Tag: "workspace", Summary: "The files changed in the workspace's repository",
			Query: runtimeclient.GitChangesQuery{}, Response: []runtimeclient.GitChange{}, Errors: errs(workspaceErrors)}, h: a.agentServerWorkspace(runtimeclient.RouteGitChanges)},
		{op: wire.Operation{Method: "GET", Path: agentSandbox + "/git/changes/{path...}", Keys: agentKeys, Tag: "workspace", Summary: "The files changed, the directory in the path (older clients)",
			Response: []runtimeclient.GitChange{}, Errors: errs(workspaceErrors)}, h: a.agentServerByPath(runtimeclient.RouteGitChanges)},
		{op: wire.Operation{Method: "GET", Path: agentSandbox + "/git/diff", Keys: agentKeys, Tag: "workspace", Summary: "A file's text now and at the base its changes are shown against",
			Query: runtimeclient.GitDiffQuery{}, Response: runtimeclient.GitDiff{}, Errors: errs(workspaceErrors)}, h: a.agentServerWorkspace(runtimeclient.RouteGitDiff)},
		{op: wire.Operation{Method: "GET", Path: agentSandbox + "/git/diff/{path...}", Keys: agentKeys, Tag: "workspace", Summary: "A file's diff, the file in the path (older clients)",
			Response: runtimeclient.GitDiff{}, Errors: errs(workspaceErrors)}, h: a.agentServerByPath(runtimeclient.RouteGitDiff)},
		{op: wire.Operation{Method: "GET", Path: agentSandbox + "/file/download/{path...}", Keys: agentKeys, Tag: "workspace", Summary: "Download a file of the workspace, the file in the path (older clients)",
			RawResponse: "application/octet-stream", Errors: errs(workspaceErrors)}, h: a.agentServerByPath(runtimeclient.RouteFileDownload)},
		{op: wire.Operation{Method: "POST", Path: agentSandbox + "/file/upload/{path...}", Keys: agentKeys, Tag: "workspace", Summary: "Upload a file into the workspace, the file in the path (older clients)",
			FileField: "file", Response: apitypes.Success{},
			Errors: errs(merge(workspaceErrors, map[int]string{413: "The file is larger than the server's bound (max_upload_mb)."}))}, h: a.agentServerByPath(runtimeclient.RouteFileUpload)},
		{op: wire.Operation{Method: "POST", Path: agentSandbox + "/bash/start_bash_command", Keys: agentKeys, Tag: "workspace", Summary: "Run a command in the sandbox in the background, out of band of any conversation; its BashOutput comes once it has ended",
			Body: runtimeclient.BashRequest{}, Response: runtimeclient.BashEvent{}, Errors: errs(merge(bashErrors, map[int]string{422: "A malformed body, or a cwd that is not a directory of the sandbox."}))}, h: a.agentServerBash(runtimeclient.RouteBashStart)},
		{op: wire.Operation{Method: "POST", Path: agentSandbox + "/bash/execute_bash_command", Keys: agentKeys, Tag: "workspace", Summary: "Run a command in the sandbox and answer its BashOutput once it has ended (or its timeout killed it)",
			Body: runtimeclient.BashRequest{}, Response: runtimeclient.BashEvent{}, Errors: errs(merge(bashErrors, map[int]string{422: "A malformed body, or a cwd that is not a directory of the sandbox."}))}, h: a.agentServerBash(runtimeclient.RouteBashExecute)},
		{op: wire.Operation{Method: "GET", Path: agentSandbox + "/bash/bash_events/search", Keys: agentKeys, Tag: "workspace", Summary: "Search the sandbox's bash events (BashCommand, BashOutput), oldest first; the sandbox keeps the last 1000",
			Query: runtimeclient.BashSearchQuery{}, Response: runtimeclient.BashEventPage{}, Errors: errs(bashErrors)}, h: a.agentServerBash(runtimeclient.RouteBashSearch)},
		{op: wire.Operation{Method: "GET", Path: agentSandbox + "/bash/bash_events/{event_id}", Keys: agentKeys, Tag: "workspace", Summary: "Get one bash event",
			Response: runtimeclient.BashEvent{}, Errors: errs(merge(bashErrors, map[int]string{404: "No such bash event (it may have been dropped), or no such sandbox of the caller's."}))}, h: a.agentServerBashEvent},
		{op: wire.Operation{Method: "GET", Path: agentSandbox + "/settings", Keys: agentKeys, Tag: "conversation-api", Summary: "The sandbox owner's settings, as an agent server keeps them; secrets null unless exposed",
			Description: "With X-Expose-Secrets: plaintext the secret settings are shown, but only to a request that carries both the owner's API key as Authorization: Bearer and the sandbox's session key (otherwise 403).",
			Response:    apitypes.AgentServerSettings{}, Errors: errs(map[int]string{
				400: "The query parameter expose_secrets: send the header X-Expose-Secrets instead.",
				403: "X-Expose-Secrets without both the owner's API key as Authorization: Bearer and the sandbox's session key (the detail says what is wrong).",
				404: "No such sandbox of the caller's.", 422: "An X-Expose-Secrets other than plaintext, true or false."})}, h: a.agentServerSettings},
		{op: wire.Operation{Method: "GET", Path: agentSandbox + "/settings/secrets", Keys: wire.SessionKey, Tag: "conversation-api",
			Summary:     "The secrets the sandbox's conversations were given: names and descriptions",
			Description: "Takes the sandbox's session key only, never a user's API key.",
			Response:    apitypes.SecretNamesResponse{}, Errors: map[int]string{401: "Missing key, or not this sandbox's session key."}}, h: a.listSandboxSecrets},
		{op: wire.Operation{Method: "GET", Path: agentSandbox + "/settings/secrets/{secret_name}", Keys: wire.SessionKey, Tag: "conversation-api",
			Summary:     "The value of a secret the sandbox's conversations were given, as text (what the SDK's LookupSecret reads)",
			Description: "Takes the sandbox's session key only, never a user's API key.",
			Response:    "", ResponseType: "text/plain",
			Errors: map[int]string{401: "Missing key, or not this sandbox's session key.", 404: "The sandbox's conversations were given no secret of that name."}}, h: a.getSandboxSecret},
		{op: wire.Operation{Method: "POST", Path: agentSandbox + "/conversations", Keys: agentKeys, Tag: "conversation-api", Summary: "Start a conversation in the sandbox, as OpenHands' SDK does (RemoteConversation): agentd's agent, with the model named; answered once it is ready",
			Description: "The agent's llm.api_key and llm.base_url, when set, must be those of the owner's LLM settings, with which the agent runs; its tools must be agentd's. A conversation_id of the caller's conversation in this sandbox is answered as it is (200).",
			Body:        apitypes.AgentStartConversationRequest{}, Response: apitypes.AgentConversationInfo{}, Status: http.StatusCreated, Errors: errs(map[int]string{
				200: "The conversation_id names the caller's conversation in this sandbox: it is answered as it is.",
				400: "At the agent-server base with an API key alone: send the sandbox's session key.",
				404: "No such sandbox of the caller's.", 409: "The conversation_id is taken by another conversation.",
				422: "A malformed body, or one asking for what agentd cannot do (an LLM key or URL other than the owner's settings', a tool agentd lacks, MCP servers, plugins, hooks, a security analyzer, a worktree, encrypted secrets); the detail says which.",
				503: "The conversation could not start in the sandbox (the detail says why), or the server is shutting down."})}, h: a.startAgentServerConversation},
		{op: wire.Operation{Method: "POST", Path: agentSandbox + "/skills", Keys: agentKeys, Tag: "conversation-api", Summary: "Load the skills an agent in the sandbox would be given: the owner's own and the skill files of a workspace directory",
			Body: apitypes.AgentSkillsRequest{}, Response: apitypes.AgentSkills{}, Errors: errs(map[int]string{
				404: "No such sandbox of the caller's.", 409: "The sandbox is not RUNNING.",
				422: "A malformed body, or a project_dir outside the workspace."})}, h: a.agentServerSkills},
		{op: wire.Operation{Method: "GET", Path: agentSandbox + "/vscode/url", Keys: agentKeys, Tag: "workspace", Summary: "The sandbox's VS Code URL: null, agentd runs no editor",
			Query: apitypes.VSCodeURLQuery{}, Response: apitypes.VSCodeURL{}, Errors: errs(nil)}, h: a.vscodeURL},
		{op: wire.Operation{Method: "GET", Path: agentSandbox + "/vscode/status", Keys: agentKeys, Tag: "workspace", Summary: "Whether the sandbox's VS Code server runs: never, agentd runs no editor",
			Response: apitypes.VSCodeStatus{}, Errors: errs(nil)}, h: a.vscodeStatus},
		{op: wire.Operation{Method: "GET", Path: agentConv + "/workspace", Keys: agentKeys, Tag: "workspace", Summary: "The workspace's index.html, served inline as a static site",
			RawResponse: "application/octet-stream", Errors: errs(merge(workspaceErrors, agentNotFound))}, h: a.serveWorkspaceFile},
		{op: wire.Operation{Method: "GET", Path: agentConv + "/workspace/{file_path...}", Keys: agentKeys, Tag: "workspace", Summary: "A file of the workspace (a directory's index.html) served inline as a static site",
			RawResponse: "application/octet-stream", Errors: errs(merge(workspaceErrors, agentNotFound))}, h: a.serveWorkspaceFile},
		{op: wire.Operation{Method: "GET", Path: "/api/v1/app-conversations/{conversation_id}/file", Tag: "app-conversations", Summary: "A workspace file's text (\"\" when there is no such file)",
			Query: apitypes.ConversationFileQuery{}, Response: "", Errors: errs(merge(appWorkspaceErrors, map[int]string{413: "The file is too large to answer as text."}))}, h: a.appConversationFile},
		{op: wire.Operation{Method: "GET", Path: "/api/v1/app-conversations/{conversation_id}/files", Tag: "app-conversations", Summary: "The regular files below a workspace directory, at most 2000",
			Query: apitypes.ConversationFilesQuery{}, Response: []string{}, Errors: errs(appWorkspaceErrors)}, h: a.appConversationFiles},
		{op: wire.Operation{Method: "GET", Path: "/api/v1/app-conversations/{conversation_id}/git/changes", Tag: "app-conversations", Summary: "The files changed in the conversation's repository",
			Query: runtimeclient.GitChangesQuery{}, Response: []runtimeclient.GitChange{}, Errors: errs(appWorkspaceErrors)}, h: a.appConversationGit(runtimeclient.RouteGitChanges)},
		{op: wire.Operation{Method: "GET", Path: "/api/v1/app-conversations/{conversation_id}/git/diff", Tag: "app-conversations", Summary: "A file's text now and at the base its changes are shown against",
			Query: runtimeclient.GitDiffQuery{}, Response: runtimeclient.GitDiff{}, Errors: errs(appWorkspaceErrors)}, h: a.appConversationGit(runtimeclient.RouteGitDiff)},

		{op: wire.Operation{Method: "GET", Path: "/api/v1/app-conversations/{conversation_id}/download", Tag: "app-conversations", Summary: "The conversation's trajectory as a zip: meta.json (the conversation) and one event_<n>_<id>.json per event, in log order",
			Description: "Written as the events are read, whatever their number: agentd has no export lock (OpenHands' 409) and no size limit (its 413).",
			RawResponse: "application/zip", Errors: errs(map[int]string{400: "Malformed conversation id.", 404: "No such conversation."})}, h: a.downloadAppConversation},
		{op: wire.Operation{Method: "GET", Path: "/api/v1/app-conversations/{conversation_id}/skills", Tag: "app-conversations", Summary: "The skills the conversation's agent is given (the workspace's and the user's, as stored when it started)",
			Response: apitypes.ConversationSkills{}, Errors: errs(map[int]string{400: "Malformed conversation id.", 404: "No such conversation."})}, h: a.appConversationSkills},
		{op: wire.Operation{Method: "GET", Path: "/api/v1/app-conversations/{conversation_id}/hooks", Tag: "app-conversations", Summary: "The conversation's lifecycle hooks: none, agentd runs none",
			Response: apitypes.ConversationHooks{}, Errors: errs(map[int]string{400: "Malformed conversation id.", 404: "No such conversation."})}, h: a.appConversationHooks},

		// Legacy V0.
		{wire.Operation{Method: "POST", Path: "/api/conversations", Tag: "v0", Summary: "Create and start a conversation",
			Body: apitypes.InitSessionRequest{}, Response: apitypes.ConversationResponse{}, Errors: errs(map[int]string{
				http.StatusUnauthorized: "Missing or wrong API key, or the caller's git provider tokens cannot reach the repository (as OpenHands).",
				409:                     "A conversation with that id exists.", http.StatusBadGateway: "The git provider could not be reached to check the repository."})}, a.createConversationV0},
		{wire.Operation{Method: "GET", Path: "/api/conversations", Tag: "v0", Summary: "List conversations, newest first",
			Query: apitypes.ConversationListQuery{}, Response: apitypes.ConversationInfoResultSet{}, Errors: errs(nil)}, a.listConversationsV0},
		{wire.Operation{Method: "GET", Path: "/api/conversations/{conversation_id}", Tag: "v0", Summary: "Get a conversation",
			Response: apitypes.ConversationInfo{}, Errors: errs(map[int]string{400: "Malformed conversation id.", 404: "No such conversation."})}, a.getConversationV0},
		{wire.Operation{Method: "DELETE", Path: "/api/conversations/{conversation_id}", Tag: "v0", Summary: "Delete a conversation and its sandbox",
			Response: true, Errors: errs(map[int]string{400: "Malformed conversation id.", 404: "No such conversation."})}, a.deleteConversationV0},
		{wire.Operation{Method: "PATCH", Path: "/api/conversations/{conversation_id}", Tag: "v0", Summary: "Rename a conversation (the web app's rename); the title is the user's from then on",
			Body: apitypes.ConversationUpdateRequest{}, Response: true, Errors: errs(map[int]string{400: "Malformed conversation id.", 404: "No such conversation."})}, a.renameConversationV0},
		{wire.Operation{Method: "GET", Path: "/api/microagent-management/conversations", Tag: "v0", Summary: "List the conversations that write a microagent for a repository (create_microagent), newest first",
			Query: apitypes.MicroagentConversationsQuery{}, Response: apitypes.ConversationInfoResultSet{}, Errors: errs(nil)}, a.microagentConversations},
		{wire.Operation{Method: "POST", Path: "/api/add-git-providers", Tag: "v0", Summary: "Check git provider tokens with their providers and store them (sealed; never returned)",
			Body: apitypes.POSTProviderModel{}, Response: apitypes.MessageResponse{}, Errors: errs(providerTokenErrors)}, a.addGitProviders},
		{wire.Operation{Method: "POST", Path: "/api/unset-provider-tokens", Tag: "v0", Summary: "Remove all stored git provider tokens",
			Response: apitypes.MessageResponse{}, Errors: errs(nil)}, a.unsetProviderTokens},
		{wire.Operation{Method: "GET", Path: "/api/user/repositories", Tag: "git", Summary: "One page of the caller's repositories at their git providers, most recently pushed first",
			Query: apitypes.RepositoryListQuery{}, Response: []apitypes.Repository{}, Errors: errs(providerErrors)}, a.userRepositories},
		{wire.Operation{Method: "GET", Path: "/api/user/repository/branches", Tag: "git", Summary: "One page of a repository's branches",
			Query: apitypes.BranchListQuery{}, Response: apitypes.PaginatedBranchesResponse{}, Errors: errs(providerErrors)}, a.repositoryBranches},
		{wire.Operation{Method: "GET", Path: "/api/user/suggested-tasks", Tag: "git", Summary: "Issues assigned to the caller, and their pull requests with conflicts, failing checks or reviews to answer",
			Response: []apitypes.SuggestedTask{}, Errors: errs(providerErrors)}, a.suggestedTasks},
		{wire.Operation{Method: "GET", Path: "/api/v1/git/repositories/search", Tag: "git", Summary: "One page of the caller's repositories at a git provider, most recently pushed first; a query keeps those whose name contains it",
			Query: apitypes.RepositorySearchQuery{}, Response: apitypes.RepositorySearchPage{}, Errors: errs(merge(providerErrors, map[int]string{400: "sort_order without a query."}))}, a.searchRepositories},
		{wire.Operation{Method: "GET", Path: "/api/v1/git/installations/search", Tag: "git", Summary: "One page of what the caller's repositories live under at a provider: GitHub App installation ids (none for a token that is no GitHub App user token), Bitbucket workspace slugs, Bitbucket Data Center project keys",
			Query: apitypes.InstallationSearchQuery{}, Response: apitypes.InstallationPage{}, Errors: errs(merge(providerErrors, map[int]string{400: "A provider without installations or workspaces (GitLab)."}))}, a.searchInstallations},
		{wire.Operation{Method: "GET", Path: "/api/v1/git/branches/search", Tag: "git", Summary: "One page of a repository's branches; a query keeps those whose name contains it",
			Query: apitypes.BranchSearchQuery{}, Response: apitypes.BranchSearchPage{}, Errors: errs(providerErrors)}, a.searchBranches},
		{wire.Operation{Method: "GET", Path: "/api/v1/git/suggested-tasks/search", Tag: "git", Summary: "One page of the issues assigned to the caller, and their pull requests with conflicts, failing checks or reviews to answer",
			Query: apitypes.SuggestedTaskSearchQuery{}, Response: apitypes.SuggestedTaskPage{}, Errors: errs(providerErrors)}, a.searchSuggestedTasks},
		{wire.Operation{Method: "GET", Path: "/api/options/config", Tag: "v0", Summary: "What the web app reads first: the app mode (oss) and its feature flags",
			Public: true, Response: apitypes.OptionsConfig{}}, a.optionsConfig},
		{wire.Operation{Method: "GET", Path: "/api/options/models", Tag: "v0", Summary: "Models to offer in llm_model, as provider/name: those agentd knows, and the server's own",
			Response: []string{}, Errors: errs(nil)}, a.optionsModels},
		{wire.Operation{Method: "GET", Path: "/api/options/agents", Tag: "v0", Summary: "The agents agentd runs: CodeActAgent",
			Response: []string{}, Errors: errs(nil)}, a.optionsAgents},
		{wire.Operation{Method: "GET", Path: "/api/options/security-analyzers", Tag: "v0", Summary: "The security analyzers agentd runs: none",
			Response: []string{}, Errors: errs(nil)}, a.optionsSecurityAnalyzers},
		{wire.Operation{Method: "GET", Path: "/api/conversations/{conversation_id}/config", Tag: "v0", Summary: "A conversation's runtime: its sandbox and session ids",
			Response: apitypes.ConversationConfig{}, Errors: errs(map[int]string{400: "Malformed conversation id.", 404: "No such conversation."})}, a.conversationConfig},
		{wire.Operation{Method: "GET", Path: "/api/settings", Tag: "v0", Summary: "The caller's settings (secrets left out)",
			Response: apitypes.SettingsView{}, Errors: errs(map[int]string{404: "No settings stored yet."})}, a.getSettings},
		{wire.Operation{Method: "POST", Path: "/api/settings", Tag: "v0", Summary: "Store settings; absent or null fields keep their value",
			Body: apitypes.Settings{}, Response: apitypes.MessageResponse{}, Errors: errs(nil)}, a.storeSettings},
	}
}
