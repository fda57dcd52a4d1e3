// Package app assembles `agentd serve` from its configuration and the implementations the
// caller chose (store, keyring, event bus, sandbox backend): the services and the HTTP API,
// started and stopped in order. It takes interfaces only; cmd/agentd is the one place that
// picks concrete ones (docs/architecture.md, "The composition root"). The binary and the
// end-to-end tests build the server through it, so they run the same thing.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentd/agentd/internal/auth"
	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/customsecret"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/gitprovider"
	"github.com/agentd/agentd/internal/gitproxy"
	"github.com/agentd/agentd/internal/httpapi"
	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/llm/anthropic"
	"github.com/agentd/agentd/internal/llm/openai"
	"github.com/agentd/agentd/internal/logctx"
	"github.com/agentd/agentd/internal/metrics"
	"github.com/agentd/agentd/internal/netpolicy"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/secret"
	"github.com/agentd/agentd/internal/settings"
	"github.com/agentd/agentd/internal/skill"
	"github.com/agentd/agentd/internal/store"
	"github.com/agentd/agentd/internal/web"
	"github.com/agentd/agentd/internal/webhook"
)

// Options are what the caller chooses: the configuration and the implementations. The app
// uses Store, Sealer, Bus and Backend but neither opens nor closes them: their owner (the
// caller) closes them after the App.
type Options struct {
	Config config.Config
	// Store keeps everything durable. A store that can let go of memory once the server is
	// idle implements store.MemoryReleaser.
	Store store.Store
	// Sealer seals the secrets kept in the store and opens them again: the keyring.
	Sealer secret.Sealer
	// Bus tells live readers of the events appended to conversations.
	Bus event.Bus
	// Backend runs the sandboxes.
	Backend sandbox.Backend
	// Replica is this server's id among the replicas of its store, which its leases of
	// conversations name; empty means one made of the node's name. A Bus that carries the
	// wake-ups of commands between replicas (conversation.Waker) must have been made for it.
	Replica string
	Logger  *slog.Logger
	Version string
	// NewLLM makes model clients; nil means NewLLM, the official adapters.
	NewLLM func(llm.Config) (llm.Client, error)
	// LLMRetry is the retry policy of model calls; the zero value is llm's default.
	LLMRetry llm.RetryPolicy
	// Agent tunes the agent loop; the zero value is the defaults.
	Agent conversation.AgentOptions
	// SandboxWatchInterval is how often vanished and idle sandboxes are looked for; zero
	// means the sandbox service's default.
	SandboxWatchInterval time.Duration
	// SandboxPoolHold bounds how long a conversation's start holds back the warm pools'
	// refill while it sets up the sandbox it claimed; zero means the sandbox service's default.
	SandboxPoolHold time.Duration
	// SandboxNow is the sandbox service's clock, which decides when a sandbox is idle; nil
	// means time.Now.
	SandboxNow func() time.Time
	// Sockets tune the API's live streams; zero fields take the configuration's values and
	// the defaults.
	Sockets httpapi.SocketOptions
	// GitRemotes resolve the repositories of conversations to their upstream and the
	// credentials agentd adds there; nil means the users' git providers (gitprovider.Service).
	GitRemotes gitproxy.Remotes
	// Metrics is the server's registry of metrics; nil means a new one.
	Metrics *metrics.Metrics
}

// NewLLM makes a model client for cfg with the adapter of its provider: Anthropic messages,
// or OpenAI chat completions for everything else.
func NewLLM(cfg llm.Config) (llm.Client, error) {
	cfg = cfg.Resolve()
	if cfg.Provider == llm.ProviderAnthropic {
		return anthropic.New(cfg)
	}
	return openai.New(cfg)
}

// App is a running control plane without its listener.
type App struct {
	// BootstrapKey is the admin key generated at the first start, to be shown once; empty
	// when the admin existed already or the key was configured.
	BootstrapKey string
	// Sandboxes and Conversations are exposed for tests and benchmarks.
	Sandboxes     *sandbox.Service
	Conversations *conversation.Service
	// returner gives memory back once no conversation runs.
	returner *memoryReturner

	handler http.Handler
	// web is the web app, whose live streams end when the server shuts down.
	web *web.App
	// agentServer serves the agent-server base; nil when the configuration has none.
	agentServer http.Handler
	// admin serves the admin listener (metrics, profiles); nil when the configuration has none.
	admin http.Handler
	log   *slog.Logger

	closeOnce sync.Once
	closers   []func() error // run in reverse order
}

// DBFile, KeyringFile and LockFile name the files of the data directory: the SQLite store's
// database, the keyring made at the first start, and the lock that keeps a second server
// off the directory (LockDataDir).
const (
	DBFile      = "agentd.db"
	KeyringFile = "keyring.json"
	LockFile    = "agentd.lock"
)

// New starts every service on o's store, keyring, bus and backend. On error everything it
// started is stopped again; what o holds stays open.
func New(ctx context.Context, o Options) (*App, error) {
	cfg := o.Config
	if o.Store == nil || o.Sealer == nil || o.Bus == nil || o.Backend == nil {
		return nil, errors.New("app: Options need a Store, a Sealer, a Bus and a Backend")
	}
	st, keyring, bus := o.Store, o.Sealer, o.Bus
	if err := checkKeyring(ctx, st, keyring); err != nil {
		return nil, err
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// Lines logged for a request, or for the conversation or sandbox it is about, name them.
	log = slog.New(logctx.Handler(log.Handler()))
	m := o.Metrics
	if m == nil {
		m = metrics.New(log)
	}
	a := &App{log: log}
	ok := false
	defer func() {
		if !ok {
			a.Close()
		}
	}()
	m.WatchStore(st.Counts)

	for _, spec := range Specs(cfg) {
		if err := st.PutSpec(ctx, spec); err != nil {
			return nil, fmt.Errorf("store sandbox spec %s: %w", spec.ID, err)
		}
		if spec.Network == sandbox.NetworkHost {
			log.Warn("sandbox spec "+spec.ID+": "+sandbox.HostNetworkWarning, "spec", spec.ID)
		}
	}
	if _, err := st.GetSpec(ctx, cfg.DefaultSpec); err != nil {
		return nil, fmt.Errorf("default sandbox spec %q: %w", cfg.DefaultSpec, err)
	}

	// Users' URLs are reached only as the policy allows them.
	urls, err := netpolicy.New(cfg.AllowInternal)
	if err != nil {
		return nil, fmt.Errorf("allow internal: %w", err)
	}
	userHTTP := func(ctx context.Context, userID string) (*http.Client, error) {
		u, err := st.GetUser(ctx, userID)
		if err != nil {
			return nil, fmt.Errorf("user %s: %w", userID, err)
		}
		return urls.Client(u.IsAdmin), nil
	}
	// Webhooks are told of the sandboxes' and conversations' transitions; their deliveries
	// start once every service runs, and stop before the store closes.
	webhooks := webhook.NewService(webhook.Options{
		Store: st, Sealer: keyring, Logger: log,
		CheckURL: func(ctx context.Context, ownerID, rawURL string) error {
			u, err := st.GetUser(ctx, ownerID)
			if err != nil {
				return fmt.Errorf("user %s: %w", ownerID, err)
			}
			return urls.CheckURL(ctx, rawURL, u.IsAdmin)
		},
		Client: userHTTP,
		ConversationExists: func(ctx context.Context, ownerID, id string) (bool, error) {
			_, err := st.GetConversation(ctx, ownerID, id)
			if errors.Is(err, conversation.ErrNotFound) {
				return false, nil
			}
			return err == nil, err
		},
		SandboxConversations: func(ctx context.Context, ownerID, sandboxID string) ([]string, error) {
			vs, _, err := st.ListConversations(ctx, ownerID, conversation.Filter{SandboxID: sandboxID, IncludeSub: true}, paging.Query{Limit: 100})
			ids := make([]string, len(vs))
			for i, v := range vs {
				ids[i] = v.ID
			}
			return ids, err
		},
		Timeout: cfg.WebhookTimeout, FirstRetry: cfg.WebhookFirstRetry, RetryFor: cfg.WebhookRetryFor,
		UserAgent: "agentd-webhooks/" + o.Version,
	})
	a.closers = append(a.closers, func() error { webhooks.Close(); return nil })

	// The conversations hear of their sandboxes' status changes once their service exists:
	// those of the start-up's reconciliation happened while the server was down, and the
	// streams' opening state shows them.
	var statusTo atomic.Pointer[conversation.Service]
	a.Sandboxes = sandbox.NewService(sandbox.ServiceOptions{
		Store: st, Backend: o.Backend, Sealer: keyring, Logger: log,
		DefaultSpec: cfg.DefaultSpec, Node: cfg.NodeName, Replica: o.Replica, MaxRunningPerUser: cfg.MaxRunningSandboxes,
		StartTimeout: cfg.SandboxStartTimeout, IdleTimeout: cfg.SandboxIdleTimeout, Pools: cfg.SandboxPools,
		OrphanGrace: cfg.SandboxOrphanGrace, PoolHold: o.SandboxPoolHold,
		WatchInterval: o.SandboxWatchInterval, Now: o.SandboxNow, Metrics: m,
		OnIdlePause: func(ctx context.Context, sb sandbox.Sandbox, idle time.Duration) {
			if err := a.Conversations.SandboxIdlePaused(ctx, sb.OwnerID, sb.ID, idle); err != nil {
				log.Error("record idle pause", "sandbox_id", sb.ID, "err", err)
			}
		},
		OnStatus: func(ctx context.Context, sb sandbox.Sandbox, from sandbox.Status) {
			if kind := sandboxWebhook(sb, from); kind != "" {
				webhooks.Notify(ctx, webhook.Event{Kind: kind, OwnerID: sb.OwnerID, SandboxID: sb.ID,
					Data: map[string]any{"spec_id": sb.SpecID}})
			}
			if c := statusTo.Load(); c != nil {
				if err := c.SandboxStatusChanged(ctx, sb.OwnerID, sb.ID, sb.Status); err != nil {
					log.Error("record sandbox status", "sandbox_id", sb.ID, "err", err)
				}
				// A backend that cannot freeze resumes by starting the sandbox again: its
				// agents are told that their processes are gone.
				if from == sandbox.StatusPaused && sb.Status == sandbox.StatusRunning && !o.Backend.Capabilities().Freeze {
					if err := c.SandboxRestarted(ctx, sb.OwnerID, sb.ID); err != nil {
						log.Error("tell the conversations their sandbox started again", "sandbox_id", sb.ID, "err", err)
					}
				}
			}
		},
	})
	a.closers = append(a.closers, a.Sandboxes.Close)
	if err := a.Sandboxes.Reconcile(ctx); err != nil {
		return nil, err
	}

	users := auth.NewService(st, auth.Options{Logger: log, SessionTTL: cfg.SessionTTL})
	if a.BootstrapKey, err = users.Bootstrap(ctx, cfg.AdminKey); err != nil {
		return nil, err
	}

	userSettings := settings.NewService(st, keyring, nil)
	userSkills := skill.NewService(st, nil)
	gitProviders := gitprovider.NewService(st, keyring, gitprovider.Options{
		Endpoints: gitprovider.Endpoints{GitHub: cfg.GitHubAPIURL, GitLab: cfg.GitLabAPIURL, Bitbucket: cfg.BitbucketAPIURL},
		Client:    userHTTP,
		// A token crosses the network in clear only to a host the administrator allowed.
		PlainHTTP: func(ctx context.Context, userID, host string) (bool, error) {
			u, err := st.GetUser(ctx, userID)
			if err != nil {
				return false, fmt.Errorf("user %s: %w", userID, err)
			}
			return urls.Admits(ctx, host, u.IsAdmin), nil
		},
		Logger: log,
	})
	customSecrets := customsecret.NewService(st, keyring, nil)
	// A changed secret is masked in every event recorded from then on.
	secretsChanged := func(userID string) { a.Conversations.SecretsChanged(userID) }
	userSettings.OnSecretsChange(secretsChanged)
	gitProviders.OnSecretsChange(secretsChanged)
	customSecrets.OnSecretsChange(secretsChanged)
	baseLLM := o.NewLLM
	if baseLLM == nil {
		baseLLM = NewLLM
	}
	// Every model call is counted (below the retry policy: each attempt).
	newLLM := func(c llm.Config) (llm.Client, error) {
		client, err := baseLLM(c)
		if err != nil {
			return nil, err
		}
		return m.LLM(client, c.Resolve().Model), nil
	}
	m.WatchStreams(bus)
	// Conversations' repositories are the users' providers' unless a caller (a test) sets
	// another resolver.
	remotes := o.GitRemotes
	if remotes == nil {
		remotes = gitProviders
	}
	git := newGitProxy(a, remotes, userHTTP, log)
	// Closed after the conversations, whose start tasks open channels, and before the
	// sandboxes and the store, which its channels use.
	a.closers = append(a.closers, func() error { git.Close(); return nil })
	// The memory a burst of conversations freed goes back to the system once they stopped.
	returner := newMemoryReturner(returnMemoryAfter, func() bool { return a.Conversations.Busy() }, freeHeap)
	a.returner = returner
	returner.alsoRelease(llm.CloseIdleConnections, urls.CloseIdleConnections,
		func() { a.Conversations.ReleaseMemory() })
	if r, ok := st.(store.MemoryReleaser); ok {
		returner.alsoRelease(func() {
			if err := r.ReleaseMemory(); err != nil {
				log.Warn("release memory", "err", err)
			}
		})
	}
	a.Conversations = conversation.NewService(conversation.Options{
		Store: st, Sandboxes: a.Sandboxes, Sealer: keyring, Logger: log,
		StartTimeout: cfg.SandboxStartTimeout,
		Events:       st, Bus: bus, Settings: userSettings,
		LLM: conversation.LLMDefaults{Provider: cfg.LLMProvider, Model: cfg.LLMModel,
			BaseURL: cfg.LLMBaseURL, APIKey: cfg.LLMAPIKey},
		NewLLM: newLLM, Retry: o.LLMRetry, Agent: o.Agent, AgentObserver: m, UserHTTP: userHTTP,
		OnIdle:        returner.idle,
		Terminal:      runtimeclient.NewTerminalWaits(cfg.TerminalNoChangeTimeout, cfg.TerminalMaxWait),
		MCP:           conversation.MCPOptions{ConnectTimeout: cfg.MCPConnectTimeout, CallTimeout: cfg.MCPCallTimeout},
		Secrets:       []conversation.SecretSource{userSettings, gitProviders, customSecrets},
		CustomSecrets: customSecrets,
		Skills:        st,
		Providers:     gitProviders,
		PullRequestOpen: func(ctx context.Context, ownerID, provider, repository string, number int) (bool, error) {
			api, err := gitProviders.API(ctx, ownerID, provider)
			if err != nil {
				return false, err
			}
			pr, err := api.PullRequest(ctx, repository, number)
			if err != nil {
				return false, err
			}
			return pr.State == gitprovider.PullRequestOpen, nil
		},
		Runtimes: func(ctx context.Context, ownerID, sandboxID string) (conversation.Runtime, error) {
			return a.Sandboxes.Client(ctx, ownerID, sandboxID)
		},
		Remotes: remotes, Git: git, Webhooks: webhooks, Titles: cfg.ConversationTitles,
		Replica: o.Replica, Node: cfg.NodeName, LeaseTTL: cfg.LeaseTTL, Waker: waker(bus), Keys: keysOf(keyring),
		Alone: !cfg.Postgres(),
		Repository: conversation.RepositoryOptions{CloneTimeout: cfg.GitCloneTimeout, SetupTimeout: cfg.SetupScriptTimeout,
			AuthorName: cfg.GitAuthorName, AuthorEmail: cfg.GitAuthorEmail},
	})
	statusTo.Store(a.Conversations)
	a.closers = append(a.closers, func() error { a.Conversations.Close(); returner.stop(); return nil })
	if err := a.Conversations.Resume(ctx); err != nil {
		return nil, err
	}
	// The watcher starts last: it reports idle pauses to the conversation service.
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	runDone := make(chan struct{})
	go func() {
		defer close(runDone)
		if err := a.Sandboxes.Run(runCtx); err != nil && !errors.Is(err, context.Canceled) {
			log.Error("sandbox watcher stopped", "err", err)
		}
	}()
	a.closers = append(a.closers, func() error { stopRun(); <-runDone; return nil })
	webhooks.Start()

	webApp, err := web.New(web.Deps{
		Auth: users, Conversations: a.Conversations, Sandboxes: a.Sandboxes, Settings: userSettings,
		GitProviders: gitProviders, CustomSecrets: customSecrets, Logger: log, PublicURL: cfg.PublicURL,
		Version: o.Version, DefaultModel: cfg.LLMModel,
	})
	if err != nil {
		return nil, err
	}
	a.web = webApp
	a.closers = append(a.closers, func() error { webApp.Close(); return nil })
	api, err := httpapi.New(httpapi.Deps{
		Auth: users, Conversations: a.Conversations, Sandboxes: a.Sandboxes,
		Settings:      userSettings,
		GitProviders:  gitProviders,
		Skills:        userSkills,
		CustomSecrets: customSecrets,
		Webhooks:      webhooks,
		Open:          keyring.Open, Logger: log, PublicURL: cfg.PublicURL, Version: o.Version,
		AgentServerURL: cfg.AgentServerPublicURL, DefaultModel: cfg.LLMModel,
		SpecWarnings: func(s sandbox.Spec) []string { return sandbox.SpecWarnings(o.Backend, s) },
		CORSOrigins:  cfg.CORSOrigins, Sockets: streamOptions(cfg, o.Sockets),
		URLs: urls, BodyTimeout: cfg.RequestBodyTimeout, MaxUploadBytes: cfg.MaxUploadMB << 20,
		Metrics: m,
		Web:     webApp,
		Checks:  checks(st, bus, a.Sandboxes),
		// The listed rows' encodings are kept as the rows are: on the same budget, and not
		// at all where the listings keep no rows.
		EncodedCacheBytes: cfg.ListingCacheBytes,
	})
	if err != nil {
		return nil, err
	}
	// First to close: the WebSockets, which the HTTP server's shutdown leaves open.
	a.closers = append(a.closers, func() error { api.Close(); return nil })
	a.handler = api
	returner.alsoRelease(api.ReleaseMemory)
	if cfg.AgentServerAddr != "" {
		a.agentServer = api.AgentServer()
	}
	if cfg.AdminAddr != "" {
		a.admin = api.AdminHandler()
	}
	ok = true
	return a, nil
}

// keysOf reports the keys of a keyring that tells them.
func keysOf(k secret.Sealer) func() ([]string, string) {
	kr, ok := k.(interface {
		KeyIDs() []string
		ActiveKeyID() string
	})
	if !ok {
		return nil
	}
	return func() ([]string, string) { return kr.KeyIDs(), kr.ActiveKeyID() }
}

// waker is the bus, if it carries the wake-ups of commands between replicas; nil leaves the
// conversation service its own.
func waker(bus event.Bus) conversation.Waker {
	if w, ok := bus.(conversation.Waker); ok {
		return w
	}
	return nil
}

// checks are the readiness checks: the store answers, the bus hears the other replicas (a
// bus that can tell), and the sandbox backend works.
func checks(st store.Store, bus event.Bus, sandboxes *sandbox.Service) []httpapi.Check {
	cs := []httpapi.Check{{Name: "store", Run: st.Ping}}
	if c, ok := bus.(event.Checker); ok {
		cs = append(cs, httpapi.Check{Name: "notifications", Run: c.Check})
	}
	return append(cs, httpapi.Check{Name: "sandbox_backend", Run: sandboxes.CheckBackend})
}

// newGitProxy is the proxy of the sandboxes' git: their conversations' repositories, their
// runtimes once running, and the user's URL policy for the provider's host.
func newGitProxy(a *App, remotes gitproxy.Remotes, userHTTP func(context.Context, string) (*http.Client, error), log *slog.Logger) *gitproxy.Service {
	return gitproxy.NewService(gitproxy.Options{
		Remotes: remotes,
		Repositories: func(ctx context.Context, ownerID, sandboxID string) ([]gitproxy.Repository, error) {
			refs, err := a.Conversations.Repositories(ctx, ownerID, sandboxID)
			out := make([]gitproxy.Repository, len(refs))
			for i, r := range refs {
				out[i] = gitproxy.Repository{Provider: r.Provider, Name: r.Name}
			}
			return out, err
		},
		Runtime: func(ctx context.Context, ownerID, sandboxID string) (*runtimeclient.Client, error) {
			if _, err := a.Sandboxes.WaitRunning(ctx, ownerID, sandboxID); err != nil {
				return nil, err
			}
			return a.Sandboxes.Client(ctx, ownerID, sandboxID)
		},
		HTTP:   userHTTP,
		Logger: log,
	})
}

// streamOptions are the live streams' options: the configuration's, where the caller (a
// test) set none.
func streamOptions(cfg config.Config, o httpapi.SocketOptions) httpapi.SocketOptions {
	if o.MaxPerConversation == 0 {
		o.MaxPerConversation = cfg.StreamMaxSubscribers
	}
	if o.EventBuffer == 0 {
		o.EventBuffer = cfg.StreamBuffer
	}
	if o.PingInterval == 0 {
		o.PingInterval = cfg.StreamHeartbeat
	}
	return o
}

// Handler serves the HTTP API.
func (a *App) Handler() http.Handler { return a.handler }

// ReturnMemory does now what the server does once no conversation has run for a while: it
// empties its caches, closes its idle connections and gives the memory freed back to the
// system.
func (a *App) ReturnMemory() { a.returner.now() }

// Server returns the HTTP server of the API, with its timeouts and bounds, to serve on a
// listener wrapped by Listener.
func (a *App) Server() *http.Server {
	srv := httpapi.NewServer(a.handler, a.log)
	// The app's live streams are plain requests that last: a shutdown ends them rather
	// than wait for them.
	srv.RegisterOnShutdown(a.web.Close)
	return srv
}

// AgentServerHandler serves the agent-server base (the conversation API at its root); nil
// when the configuration has none.
func (a *App) AgentServerHandler() http.Handler { return a.agentServer }

// AgentServer returns the HTTP server of the agent-server base, to serve on the configured
// agent-server address with a listener wrapped by Listener; nil when the configuration has
// none.
func (a *App) AgentServer() *http.Server {
	if a.agentServer == nil {
		return nil
	}
	return httpapi.NewServer(a.agentServer, a.log)
}

// AdminHandler serves the admin listener (/metrics, /debug/pprof/, the health routes) without
// a key; nil when the configuration has none.
func (a *App) AdminHandler() http.Handler { return a.admin }

// AdminServer returns the HTTP server of the admin listener, to serve on the configured
// admin address with a listener wrapped by Listener; nil when the configuration has none.
func (a *App) AdminServer() *http.Server {
	if a.admin == nil {
		return nil
	}
	return httpapi.NewServer(a.admin, a.log)
}

// Listener wraps ln for Server, so that the answers net/http gives by itself (to a request
// it cannot parse) carry a JSON detail too.
func Listener(ln net.Listener) net.Listener { return httpapi.JSONRefusals(ln) }

// Close ends the API's WebSockets and stops the services (start tasks, the sandbox watcher),
// in the reverse order of starting; the store, keyring, bus and backend stay open for their
// owner to close. Sandboxes keep running; the next start adopts them. Safe twice.
func (a *App) Close() {
	a.closeOnce.Do(func() {
		for i := len(a.closers) - 1; i >= 0; i-- {
			if err := a.closers[i](); err != nil {
				a.log.Warn("close", "err", err)
			}
		}
	})
}

// Specs returns the built-in presets followed by the config file's specs (which may replace
// a preset of the same id). Every limit a spec leaves at zero takes the server's default, and
// a spec that names no network gets egress.
func Specs(cfg config.Config) []sandbox.Spec {
	created := time.Unix(0, 0).UTC() // a fixed time, so restarts do not change the specs
	specs := []sandbox.Spec{{
		ID:          "default",
		Description: "The agentd runtime on the host's system directories, with outbound network access and the server's default limits.",
		Command:     []string{"agentd", "runtime"},
		InitialEnv:  map[string]string{},
		WorkingDir:  "/workspace",
		Network:     sandbox.NetworkEgress,
		Limits:      limits(config.LimitsConfig{}.WithDefaults(cfg.SandboxLimits)),
		CreatedAt:   created,
	}}
	for _, s := range cfg.Specs {
		spec := sandbox.Spec{
			ID: s.ID, Description: s.Description, Command: s.Command, InitialEnv: s.InitialEnv,
			WorkingDir: s.WorkingDir, Image: s.Image, Rootfs: s.Rootfs, Network: sandbox.NetworkOf(sandbox.Spec{Network: s.Network}),
			Limits:    limits(s.Limits.WithDefaults(cfg.SandboxLimits)),
			CreatedAt: created,
		}
		if len(spec.Command) == 0 {
			spec.Command = []string{"agentd", "runtime"}
		}
		if spec.InitialEnv == nil {
			spec.InitialEnv = map[string]string{}
		}
		if spec.WorkingDir == "" {
			spec.WorkingDir = "/workspace"
		}
		replaced := false
		for i := range specs {
			if specs[i].ID == spec.ID {
				specs[i], replaced = spec, true
			}
		}
		if !replaced {
			specs = append(specs, spec)
		}
	}
	return specs
}

func limits(l config.LimitsConfig) sandbox.Limits {
	return sandbox.Limits{MemoryBytes: l.MemoryMB << 20, CPUs: l.CPUs, PIDs: l.PIDs,
		DiskBytes: l.DiskMB << 20, TmpBytes: l.TmpMB << 20}
}

// sandboxWebhook is the webhook kind of a sandbox's change of status from from, "" for a
// change webhooks are not told of.
func sandboxWebhook(sb sandbox.Sandbox, from sandbox.Status) string {
	switch {
	case sb.Status == sandbox.StatusMissing && sb.Detail == sandbox.DetailDeleted:
		return webhook.KindSandboxDeleted
	case from == sandbox.StatusRunning && sb.Status == sandbox.StatusPaused:
		return webhook.KindSandboxPaused
	case from == sandbox.StatusPaused && sb.Status == sandbox.StatusRunning:
		return webhook.KindSandboxResumed
	}
	return ""
}
