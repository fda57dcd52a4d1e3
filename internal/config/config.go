// Package config loads agentd's one typed configuration: command-line flags first, then the
// environment, then the config file, then built-in defaults. It is the only reader of the
// environment; everything else receives values.
package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/agentd/agentd/internal/netpolicy"
)

// MemoryLimitAuto is the MemoryLimit that asks for a share of the memory limit of the
// server's cgroup (internal/memlimit.FromCgroup), or none where the cgroup sets none.
const MemoryLimitAuto = -1

// Config is everything `agentd serve` can be told.
type Config struct {
	// Addr is the listen address of the HTTP server.
	Addr string
	// DataDir holds the database, the keyring and the sandboxes' directories.
	DataDir string
	// Database is "sqlite" (the store in the data directory) or a PostgreSQL URL
	// (postgres://…), which several replicas share.
	Database string
	// KeyringFile is a keyring file every replica reads (a mounted secret); Keyring is a
	// keyring's content itself. With neither, a server on SQLite keeps its keyring in the
	// data directory, made at the first start.
	KeyringFile string
	Keyring     string
	// KeyringReload is how often the keyring file is read again.
	KeyringReload time.Duration
	// NodeName names the machine whose sandboxes this server runs (node-local backends):
	// by default the host name and a digest of the data directory.
	NodeName string
	// LeaseTTL is how long a replica's lease of a conversation lives without renewal: how
	// long the others wait before they take over a dead replica's conversations.
	LeaseTTL time.Duration
	// PublicURL is how clients reach this server; URLs handed to clients start with it.
	PublicURL string
	// AgentServerAddr is the listen address of the agent-server base (the conversation API
	// at the root, where OpenHands' clients look for it); empty when there is none.
	AgentServerAddr string
	// AgentServerPublicURL is how clients reach the agent-server base; conversation URLs
	// start with it. Empty when there is no base.
	AgentServerPublicURL string
	// AdminAddr is the listen address of the admin listener (metrics, profiles, health,
	// without a key); empty when there is none.
	AdminAddr string
	// SandboxBackend is "auto", "process", "bwrap", "docker" or "kubernetes". auto picks the
	// best the machine offers.
	SandboxBackend string
	// DockerHost is the Docker engine address of the docker backend, in the DOCKER_HOST
	// form (unix:///var/run/docker.sock). The engine must run on this machine.
	DockerHost string
	// Kubeconfig is the kubeconfig file of the kubernetes backend; empty means the
	// in-cluster configuration (agentd runs in a pod).
	Kubeconfig string
	// KubernetesNamespace holds the kubernetes backend's sandboxes.
	KubernetesNamespace string
	// KubernetesRuntimeImage is agentd's image, which the sandbox pods' init containers run.
	KubernetesRuntimeImage string
	// KubernetesInstallation labels this installation's sandboxes, apart from another's in
	// the same namespace.
	KubernetesInstallation string
	// KubernetesReach is how the control plane reaches sandbox pods: "auto", "ip" or
	// "port-forward". auto is ip in a cluster, port-forward with a kubeconfig.
	KubernetesReach string
	// KubernetesDeny are the address prefixes a kubernetes sandbox with network egress
	// cannot reach (beside its node and the API server).
	KubernetesDeny []netip.Prefix
	// KubernetesStorageClass is the storage class of the sandboxes' workspace volumes;
	// empty means the cluster's default.
	KubernetesStorageClass string
	// AdminKey, when set, becomes the admin's API key at the first start.
	AdminKey string
	// DefaultSpec is the sandbox spec used when a request names none.
	DefaultSpec string
	// MaxRunningSandboxes bounds the starting and running sandboxes of one user; 0 means no
	// bound.
	MaxRunningSandboxes int
	// SandboxPools are the warm pools: how many sandboxes of each spec (by id; "" is the
	// default spec) are kept started ahead of need. Empty or 0 keeps none.
	SandboxPools map[string]int
	// SandboxStartTimeout bounds the wait for a new sandbox's runtime to answer.
	SandboxStartTimeout time.Duration
	// SandboxIdleTimeout, when positive, pauses sandboxes nobody used for that long.
	SandboxIdleTimeout time.Duration
	// SandboxOrphanGrace is how long a remote backend's sandbox without a record is left
	// alone before it is removed.
	SandboxOrphanGrace time.Duration
	// TerminalNoChangeTimeout ends an agent's terminal call once its command has printed
	// nothing new for that long; TerminalMaxWait ends it after that long even while the
	// command keeps printing. The command runs on either way, for the agent's next call.
	TerminalNoChangeTimeout time.Duration
	TerminalMaxWait         time.Duration
	// WebhookTimeout bounds one delivery attempt; WebhookFirstRetry is the wait after the
	// first failed one (doubling after each), and WebhookRetryFor how long a delivery is
	// retried before it is marked failed.
	WebhookTimeout    time.Duration
	WebhookFirstRetry time.Duration
	WebhookRetryFor   time.Duration
	// MCPConnectTimeout bounds starting (or reaching) a conversation's MCP server and listing
	// its tools; MCPCallTimeout bounds a call to one of its tools, unless the server sets a
	// timeout of its own (a streamable-HTTP server's timeout).
	MCPConnectTimeout time.Duration
	MCPCallTimeout    time.Duration
	// CORSOrigins are the browser origins allowed to call the API; empty allows any
	// localhost origin, "*" allows every origin.
	CORSOrigins []string
	// SessionTTL is how long a web app session lasts unused.
	SessionTTL time.Duration
	// LLMModel, LLMBaseURL, LLMAPIKey and LLMProvider are the server-wide LLM, used for
	// users who set none in their settings. LLMProvider is "", "openai" or "anthropic"; empty
	// infers it from the model name.
	LLMModel    string
	LLMBaseURL  string
	LLMAPIKey   string
	LLMProvider string
	// AllowInternal admits internal addresses (prefixes, addresses, host names) to the URLs
	// users supply, such as their LLM base URL; see netpolicy.
	AllowInternal []string
	// GitHubAPIURL, GitLabAPIURL and BitbucketAPIURL are the API base URLs of the public
	// git providers, used for tokens stored without a host; a user's host replaces them for
	// that user. A Bitbucket base ending in /rest/api/1.0 is a Bitbucket Data Center server.
	GitHubAPIURL    string
	GitLabAPIURL    string
	BitbucketAPIURL string
	// RequestBodyTimeout bounds the time a request body takes to arrive.
	RequestBodyTimeout time.Duration
	// MaxUploadMB bounds a file uploaded into a conversation's workspace, in MiB.
	MaxUploadMB int64
	// MemoryLimit is the soft limit of the server's resident memory in bytes, which main
	// keeps by setting the Go runtime's soft limit (internal/memlimit); 0 means none, and
	// MemoryLimitAuto a share of the memory limit of the server's cgroup, read at start-up.
	// It is 0 when GoMemLimit is set.
	MemoryLimit int64
	// GoMemLimit is GOMEMLIMIT as the operator set it in the environment: the Go runtime's
	// own limit, which the runtime reads itself and the server then leaves alone.
	GoMemLimit string
	// SQLiteCacheBytes is the page cache of the SQLite store, shared by its connections.
	SQLiteCacheBytes int64
	// ListingCacheBytes bounds the rows (events, start tasks, sandboxes, conversations) the
	// store keeps from its listings; 0 means none.
	ListingCacheBytes int64
	// StreamMaxSubscribers bounds the live streams (event sockets and SSE streams together)
	// of one conversation; StreamBuffer is how many live events may wait for one stream
	// before it is closed for falling behind; StreamHeartbeat is how often an idle stream
	// shows it is alive.
	StreamMaxSubscribers int
	StreamBuffer         int
	StreamHeartbeat      time.Duration
	// LogLevel is debug, info, warn or error; LogFormat is text or json.
	LogLevel  string
	LogFormat string
	// ConfigFile is the TOML file that was read, if any.
	ConfigFile string
	// Specs are sandbox specs added by the config file, beside the built-in presets.
	Specs []SpecConfig
	// SandboxLimits are the limits of the default spec, and of every other spec for each
	// limit it leaves at zero. A zero here means no limit by default.
	SandboxLimits LimitsConfig
	// SandboxMaxLimits is the ceiling of every spec's limits; zero means no ceiling. A spec
	// above it, or a default above it, is a configuration error.
	SandboxMaxLimits LimitsConfig
	// SandboxUID is the unprivileged host uid and gid of every sandbox's commands (bwrap,
	// docker; bwrap's runtime too). It is never 0.
	SandboxUID int
	// GitCloneTimeout bounds the clone of a conversation's repository, SetupScriptTimeout
	// its .openhands/setup.sh.
	GitCloneTimeout    time.Duration
	SetupScriptTimeout time.Duration
	// GitAuthorName and GitAuthorEmail are the author of the agents' commits for users
	// whose settings and git provider name none.
	GitAuthorName  string
	GitAuthorEmail string
	// ConversationTitles is how conversations the user did not name are named: model (the
	// conversation's model writes the title), message (the start of the first message) or
	// off ("Conversation <id>").
	ConversationTitles string
}

// SpecConfig is a sandbox spec in the config file.
type SpecConfig struct {
	ID          string            `toml:"id"`
	Description string            `toml:"description"`
	Command     []string          `toml:"command"`
	InitialEnv  map[string]string `toml:"initial_env"`
	WorkingDir  string            `toml:"working_dir"`
	Image       string            `toml:"image"`
	Rootfs      string            `toml:"rootfs"`
	Network     string            `toml:"network"`
	Limits      LimitsConfig      `toml:"limits"`
}

// LimitsConfig bounds a spec's resources; zero takes the server's default (SandboxLimits).
type LimitsConfig struct {
	MemoryMB int64   `toml:"memory_mb"`
	CPUs     float64 `toml:"cpus"`
	PIDs     int64   `toml:"pids"`
	DiskMB   int64   `toml:"disk_mb"`
	TmpMB    int64   `toml:"tmp_mb"`
}

// Option describes one setting: its flag, environment variables and default. The table is
// the single source for parsing and for docs/configuration.md.
type Option struct {
	Flag    string
	Env     []string // first is the canonical name; later ones are accepted aliases
	File    string   // key in the config file
	Default string
	Doc     string
	Secret  bool
	set     func(c *Config, v string) error
}

// Options lists every setting in documentation order.
func Options() []Option {
	return []Option{
		{Flag: "addr", Env: []string{"AGENTD_ADDR"}, File: "addr", Default: "127.0.0.1:3000",
			Doc: "Listen address of the HTTP server. Port 0: a free port the system picks, which the `agentd serving` log line names and the URLs made from addr use.",
			set: func(c *Config, v string) error { c.Addr = v; return nil }},
		{Flag: "data-dir", Env: []string{"AGENTD_DATA_DIR"}, File: "data_dir", Default: "./.agentd",
			Doc: "Directory for the database, the server keyring and sandbox directories.",
			set: func(c *Config, v string) error { c.DataDir = v; return nil }},
		{Flag: "database", Env: []string{"AGENTD_DATABASE"}, File: "database", Default: "sqlite", Secret: true,
			Doc: "The store: sqlite for the SQLite database in the data directory (one server), or a PostgreSQL URL such as postgres://agentd:PASSWORD@db.internal:5432/agentd?sslmode=verify-full, for servers that keep their data in a database server (docs/architecture.md, \"The PostgreSQL store\"). The server applies its schema itself, once, when several start together.",
			set: func(c *Config, v string) error { c.Database = strings.TrimSpace(v); return nil }},
		{Flag: "keyring-file", Env: []string{"AGENTD_KEYRING_FILE"}, File: "keyring_file", Default: "",
			Doc: "Keyring file that seals the stored secrets (made by agentd keyring create), read at start-up and again when it changes: every replica of one database reads the same one, e.g. a mounted Kubernetes Secret. Empty: on SQLite, the keyring in the data directory, made at the first start; on PostgreSQL, AGENTD_KEYRING, and the server refuses to start without either.",
			set: func(c *Config, v string) error { c.KeyringFile = strings.TrimSpace(v); return nil }},
		{Flag: "keyring-reload", Env: []string{"AGENTD_KEYRING_RELOAD"}, File: "keyring_reload", Default: "10s",
			Doc: "How often the server reads its keyring file again, so that a key added or made active in it (agentd keyring add-key, activate) takes effect without a restart. At least 100ms.",
			set: func(c *Config, v string) error { return setDuration(&c.KeyringReload, v) }},
		{Flag: "keyring", Env: []string{"AGENTD_KEYRING"}, File: "keyring", Default: "", Secret: true,
			Doc: "The keyring itself (the content of a keyring file), for servers given their secrets in the environment; keyring-file is read first. Rotation needs a file.",
			set: func(c *Config, v string) error { c.Keyring = strings.TrimSpace(v); return nil }},
		{Flag: "node-name", Env: []string{"AGENTD_NODE_NAME"}, File: "node_name", Default: "",
			Doc: "Name of the machine this server's process, bwrap and docker sandboxes run on, recorded with each sandbox: a server reconciles, watches and pauses only its own node's sandboxes, and refuses (503) to reach one of another node. Letters, digits, dots, dashes and underscores. Empty: the host name and a digest of the data directory (host-1a2b3c4d), which stays the same across restarts.",
			set: func(c *Config, v string) error { c.NodeName = strings.TrimSpace(v); return nil }},
		{Flag: "conversation-lease", Env: []string{"AGENTD_CONVERSATION_LEASE"}, File: "conversation_lease", Default: "10s",
			Doc: "How long a server's lease on a conversation it runs lives without renewal (it renews it every third of that): when a server dies, another that reaches the conversation's sandbox takes it over after this, and continues it from its event log. Shorter takes over sooner; longer survives longer pauses of a server (a slow database, a stalled machine) without a needless takeover. At least 1s.",
			set: func(c *Config, v string) error { return setDuration(&c.LeaseTTL, v) }},
		{Flag: "public-url", Env: []string{"AGENTD_PUBLIC_URL"}, File: "public_url", Default: "",
			Doc: "Base URL clients use to reach this server (default: http://<addr>).",
			set: func(c *Config, v string) error { c.PublicURL = strings.TrimRight(v, "/"); return nil }},
		{Flag: "agent-server-addr", Env: []string{"AGENTD_AGENT_SERVER_ADDR"}, File: "agent_server_addr", Default: "auto",
			Doc: "Listen address of the agent-server API: the conversation API at the root of a listener of its own (/api/conversations/…, /sockets/events/…, /api/file/…, /api/git/…, /api/bash/…), where OpenHands' web app and SDK clients look for it; conversation_url and AGENT_SERVER URLs lead there. auto: the host of addr with the next port (127.0.0.1:3001 beside the default addr; a port the system picks when addr's is 0). off: no such listener; those URLs then lead to the main server's /agent-server/<sandbox id> prefix, which clients that keep only the host of a conversation_url cannot use.",
			set: func(c *Config, v string) error { c.AgentServerAddr = v; return nil }},
		{Flag: "agent-server-public-url", Env: []string{"AGENTD_AGENT_SERVER_PUBLIC_URL"}, File: "agent_server_public_url", Default: "",
			Doc: "Base URL clients use to reach the agent-server API (default: http://<agent-server-addr>). It must keep the API at its root: a path in it is lost on clients that keep only the host.",
			set: func(c *Config, v string) error { c.AgentServerPublicURL = strings.TrimRight(v, "/"); return nil }},
		{Flag: "admin-addr", Env: []string{"AGENTD_ADMIN_ADDR"}, File: "admin_addr", Default: "",
			Doc: "Listen address of the admin listener, e.g. 127.0.0.1:9090: /metrics (Prometheus), Go's profiles under /debug/pprof/ and the health routes, without a key, for operators and their scrapers; keep it off networks users reach. Empty: no such listener; admins then read /metrics and /debug/pprof/ on the main address with their key.",
			set: func(c *Config, v string) error { c.AdminAddr = strings.TrimSpace(v); return nil }},
		{Flag: "sandbox-backend", Env: []string{"AGENTD_SANDBOX_BACKEND"}, File: "sandbox_backend", Default: "auto",
			Doc: "Sandbox backend: auto, process, bwrap, docker or kubernetes. auto uses the best one the machine offers (never kubernetes).",
			set: func(c *Config, v string) error { c.SandboxBackend = v; return nil }},
		{Flag: "docker-host", Env: []string{"AGENTD_DOCKER_HOST", "DOCKER_HOST"}, File: "docker_host", Default: "unix:///var/run/docker.sock",
			Doc: "Docker engine address for the docker backend, as in DOCKER_HOST. The engine must run on this machine: sandboxes bind-mount directories of the data directory.",
			set: func(c *Config, v string) error { c.DockerHost = v; return nil }},
		{Flag: "kubeconfig", Env: []string{"AGENTD_KUBECONFIG", "KUBECONFIG"}, File: "kubeconfig", Default: "",
			Doc: "kubeconfig file of the kubernetes backend's cluster. Empty: the in-cluster configuration, for agentd running in a pod (its service account).",
			set: func(c *Config, v string) error { c.Kubeconfig = v; return nil }},
		{Flag: "kubernetes-namespace", Env: []string{"AGENTD_KUBERNETES_NAMESPACE"}, File: "kubernetes_namespace", Default: "agentd-sandboxes",
			Doc: "Namespace of the kubernetes backend's sandboxes. It must exist, and agentd's identity must hold the Role below in it.",
			set: func(c *Config, v string) error { c.KubernetesNamespace = v; return nil }},
		{Flag: "kubernetes-runtime-image", Env: []string{"AGENTD_KUBERNETES_RUNTIME_IMAGE"}, File: "kubernetes_runtime_image", Default: "",
			Doc: "agentd's image, with the statically linked agentd at /agentd, which every sandbox pod's init container runs to bring the runtime into the sandbox's image. Required with the kubernetes backend.",
			set: func(c *Config, v string) error { c.KubernetesRuntimeImage = v; return nil }},
		{Flag: "kubernetes-installation", Env: []string{"AGENTD_KUBERNETES_INSTALLATION"}, File: "kubernetes_installation", Default: "default",
			Doc: "Name of this agentd installation (a label value): its sandbox objects carry it, and it lists, adopts and removes only those. Give each installation sharing a namespace its own; every replica of one installation the same.",
			set: func(c *Config, v string) error { c.KubernetesInstallation = v; return nil }},
		{Flag: "kubernetes-reach", Env: []string{"AGENTD_KUBERNETES_REACH"}, File: "kubernetes_reach", Default: "auto",
			Doc: "How agentd reaches its sandboxes' runtimes: ip (the pod's address: agentd runs in the cluster), port-forward (through the API server: pod addresses are not routable from agentd) or auto (ip in a cluster, port-forward with a kubeconfig). Both use TLS pinned to each sandbox's own key.",
			set: func(c *Config, v string) error { c.KubernetesReach = v; return nil }},
		{Flag: "kubernetes-deny", Env: []string{"AGENTD_KUBERNETES_DENY"}, File: "kubernetes_deny",
			Default: "10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,100.64.0.0/10,169.254.0.0/16,127.0.0.0/8,fc00::/7,fe80::/10",
			Doc:     "Comma-separated address prefixes a kubernetes sandbox with network egress cannot reach: the cluster's pod, service and node ranges, metadata addresses, agentd. The node a sandbox runs on and the API server are always added.",
			set:     func(c *Config, v string) error { return setPrefixes(&c.KubernetesDeny, v) }},
		{Flag: "kubernetes-storage-class", Env: []string{"AGENTD_KUBERNETES_STORAGE_CLASS"}, File: "kubernetes_storage_class", Default: "",
			Doc: "Storage class of the sandboxes' workspace volumes (a claim per sandbox, sized by its spec's disk_mb, else 10 GiB); empty: the cluster's default class.",
			set: func(c *Config, v string) error { c.KubernetesStorageClass = v; return nil }},
		{Flag: "admin-key", Env: []string{"AGENTD_ADMIN_KEY", "SESSION_API_KEY"}, File: "admin_key", Default: "", Secret: true,
			Doc: "API key for the admin created at the first start (instead of a generated one).",
			set: func(c *Config, v string) error { c.AdminKey = v; return nil }},
		{Flag: "default-spec", Env: []string{"AGENTD_DEFAULT_SPEC"}, File: "default_spec", Default: "default",
			Doc: "Sandbox spec used when a request names none.",
			set: func(c *Config, v string) error { c.DefaultSpec = v; return nil }},
		{Flag: "max-running-sandboxes", Env: []string{"AGENTD_MAX_RUNNING_SANDBOXES"}, File: "max_running_sandboxes", Default: "20",
			Doc: "Most sandboxes one user may have starting or running at once (paused ones do not count); 0 means no bound. 20 lets a user run many agents side by side, and keeps one user from holding an unbounded share of the machine's memory and processes (each sandbox may use its spec's limits).",
			set: func(c *Config, v string) error { return setInt(&c.MaxRunningSandboxes, v) }},
		{Flag: "sandbox-pool", Env: []string{"AGENTD_SANDBOX_POOL"}, File: "sandbox_pool", Default: "2",
			Doc: "Warm pools: sandboxes started ahead of need, with no owner, no key and nothing of any user, that a start claims and then hands its key and environment to, so it is running at once; the pool starts another in the background. A number sizes the default spec's pool; `spec=n` entries, comma-separated, size other specs' (`2,python=1`). 0 keeps none. Pooled sandboxes count against no user's limit. The process, bwrap and docker backends keep pools, each server its own, destroyed when it stops; the kubernetes backend keeps them in the cluster for every replica, filled by the one that reconciles (its sizes count) and kept when a replica stops (0 there empties them).",
			set: func(c *Config, v string) error { return setPools(&c.SandboxPools, v) }},
		{Flag: "sandbox-start-timeout", Env: []string{"AGENTD_SANDBOX_START_TIMEOUT"}, File: "sandbox_start_timeout", Default: "30s",
			Doc: "How long a sandbox may take to start, until its runtime answers, before the start fails and the sandbox is ERROR; also how long a resume may take. The backends' own waits within a start (bwrap's for its set-up and its runtime, docker's for the runtime's socket) end there too, so a machine too busy for the default may be given more.",
			set: func(c *Config, v string) error { return setDuration(&c.SandboxStartTimeout, v) }},
		{Flag: "sandbox-orphan-grace", Env: []string{"AGENTD_SANDBOX_ORPHAN_GRACE"}, File: "sandbox_orphan_grace", Default: "2m",
			Doc: "How long a kubernetes sandbox labelled with this installation but unknown to the store is left alone before the replica that reconciles removes it (a start in flight on another replica stores its record first; so does a STARTING record with no answer from the cluster yet, kept at least the start timeout).",
			set: func(c *Config, v string) error { return setDuration(&c.SandboxOrphanGrace, v) }},
		{Flag: "cors-origins", Env: []string{"AGENTD_CORS_ORIGINS", "PERMITTED_CORS_ORIGINS"}, File: "cors_origins", Default: "",
			Doc: "Comma-separated browser origins allowed to call the API (e.g. https://app.example.com); empty allows any localhost origin, * allows all.",
			set: func(c *Config, v string) error { c.CORSOrigins = splitList(v); return nil }},
		{Flag: "session-ttl", Env: []string{"AGENTD_SESSION_TTL"}, File: "session_ttl", Default: "168h",
			Doc: "How long a session of the web app lasts without being used (it is renewed while used, and never outlives the API key it was signed in with).",
			set: func(c *Config, v string) error { return setDuration(&c.SessionTTL, v) }},
		{Flag: "llm-model", Env: []string{"AGENTD_LLM_MODEL"}, File: "llm_model", Default: "",
			Doc: "Model for users whose settings name none, e.g. gpt-4o, claude-sonnet-4-5, or anthropic/claude-sonnet-4-5.",
			set: func(c *Config, v string) error { c.LLMModel = strings.TrimSpace(v); return nil }},
		{Flag: "llm-base-url", Env: []string{"AGENTD_LLM_BASE_URL"}, File: "llm_base_url", Default: "",
			Doc: "API address for that model: an OpenAI-compatible server (http://localhost:11434/v1 for Ollama) or a proxy; empty means the provider's public API.",
			set: func(c *Config, v string) error {
				c.LLMBaseURL = strings.TrimRight(strings.TrimSpace(v), "/")
				return nil
			}},
		{Flag: "llm-api-key", Env: []string{"AGENTD_LLM_API_KEY"}, File: "llm_api_key", Default: "", Secret: true,
			Doc: "API key for that model. Users' own keys (llm_api_key in their settings) take precedence; this key is never sent to a base URL a user chose.",
			set: func(c *Config, v string) error { c.LLMAPIKey = strings.TrimSpace(v); return nil }},
		{Flag: "llm-provider", Env: []string{"AGENTD_LLM_PROVIDER"}, File: "llm_provider", Default: "",
			Doc: "Wire protocol of that API: openai (chat completions, also every compatible server) or anthropic (messages). Empty infers it from the model name (claude-* and anthropic/* are anthropic).",
			set: func(c *Config, v string) error { c.LLMProvider = strings.ToLower(strings.TrimSpace(v)); return nil }},
		{Flag: "allow-internal", Env: []string{"AGENTD_ALLOW_INTERNAL"}, File: "allow_internal", Default: "",
			Doc: "Comma-separated internal addresses that users' URLs (their llm_base_url, their webhooks, their git providers' hosts) may reach: prefixes (10.0.0.0/8, 127.0.0.0/8), addresses (::1) or host names (ollama.internal, admitting whatever the name resolves to). Otherwise loopback, private, link-local, cloud metadata and other internal addresses are refused for users who are not admins; the server's own URLs (llm-base-url) are not restricted.",
			set: func(c *Config, v string) error { c.AllowInternal = splitList(v); return nil }},
		{Flag: "github-api-url", Env: []string{"AGENTD_GITHUB_API_URL"}, File: "github_api_url", Default: "https://api.github.com",
			Doc: "GitHub's REST API for tokens stored without a host (or with github.com). A GitHub Enterprise Server's is https://<host>/api/v3; users may instead give their token's host.",
			set: func(c *Config, v string) error { c.GitHubAPIURL = trimURL(v); return nil }},
		{Flag: "gitlab-api-url", Env: []string{"AGENTD_GITLAB_API_URL"}, File: "gitlab_api_url", Default: "https://gitlab.com/api/v4",
			Doc: "GitLab's REST API for tokens stored without a host (or with gitlab.com); a self-managed GitLab's is https://<host>/api/v4.",
			set: func(c *Config, v string) error { c.GitLabAPIURL = trimURL(v); return nil }},
		{Flag: "bitbucket-api-url", Env: []string{"AGENTD_BITBUCKET_API_URL"}, File: "bitbucket_api_url", Default: "https://api.bitbucket.org/2.0",
			Doc: "Bitbucket's REST API for tokens stored without a host (or with bitbucket.org): Bitbucket Cloud's, or a Bitbucket Data Center server's (https://<host>/rest/api/1.0, recognised by that ending).",
			set: func(c *Config, v string) error { c.BitbucketAPIURL = trimURL(v); return nil }},
		{Flag: "request-body-timeout", Env: []string{"AGENTD_REQUEST_BODY_TIMEOUT"}, File: "request_body_timeout", Default: "60s",
			Doc: "How long a request body may take to arrive; a slower one is answered 408 and its connection closed.",
			set: func(c *Config, v string) error { return setDuration(&c.RequestBodyTimeout, v) }},
		{Flag: "max-upload-mb", Env: []string{"AGENTD_MAX_UPLOAD_MB"}, File: "max_upload_mb", Default: "100",
			Doc: "Largest file, in MiB, that may be uploaded into a conversation's workspace (at most 4096); a larger one is answered 413. The upload must also arrive within the request body timeout.",
			set: func(c *Config, v string) error { return setInt64(&c.MaxUploadMB, v) }},
		{Flag: "stream-max-subscribers", Env: []string{"AGENTD_STREAM_MAX_SUBSCRIBERS"}, File: "stream_max_subscribers", Default: "100",
			Doc: "Most live streams one conversation may have open at once, event sockets and SSE streams together; one more is refused (a socket closes with 1013, an SSE stream is answered 429).",
			set: func(c *Config, v string) error { return setInt(&c.StreamMaxSubscribers, v) }},
		{Flag: "stream-buffer", Env: []string{"AGENTD_STREAM_BUFFER"}, File: "stream_buffer", Default: "256",
			Doc: "How many live events may wait to be sent on one stream. A client further behind is disconnected with a reason (SSE: a final close event; WebSocket: 1013) and resumes after the last event it received, losing nothing; the agent never waits for a client.",
			set: func(c *Config, v string) error { return setInt(&c.StreamBuffer, v) }},
		{Flag: "stream-heartbeat", Env: []string{"AGENTD_STREAM_HEARTBEAT"}, File: "stream_heartbeat", Default: "15s",
			Doc: "How often a live stream shows it is alive, so that proxies keep an idle one open: an SSE comment, a WebSocket ping (a socket that has not answered by the next ping is closed).",
			set: func(c *Config, v string) error { return setDuration(&c.StreamHeartbeat, v) }},
		{Flag: "sandbox-idle-timeout", Env: []string{"AGENTD_SANDBOX_IDLE_TIMEOUT"}, File: "sandbox_idle_timeout", Default: "0",
			Doc: "Pause a running sandbox nobody used for this long (no agent working in it, no command or tool call), e.g. 30m; the pause is recorded on its conversations. 0 never pauses.",
			set: func(c *Config, v string) error { return setDuration(&c.SandboxIdleTimeout, v) }},
		{Flag: "terminal-no-change-timeout", Env: []string{"AGENTD_TERMINAL_NO_CHANGE_TIMEOUT"}, File: "terminal_no_change_timeout", Default: "30s",
			Doc: "An agent's terminal call returns once its command has printed nothing new for this long, with the output so far and a note that the command still runs (the agent can then wait for more, type into it or interrupt it). As in OpenHands.",
			set: func(c *Config, v string) error { return setDuration(&c.TerminalNoChangeTimeout, v) }},
		{Flag: "terminal-max-wait", Env: []string{"AGENTD_TERMINAL_MAX_WAIT"}, File: "terminal_max_wait", Default: "2m",
			Doc: "The longest an agent's terminal call waits for its command, even while it keeps printing and whatever timeout the model asked for; the command runs on. Long enough for most builds and installs to finish in one call, short enough that a command printing without end (yes, a server in the foreground) gives the agent its turn back.",
			set: func(c *Config, v string) error { return setDuration(&c.TerminalMaxWait, v) }},
		{Flag: "mcp-connect-timeout", Env: []string{"AGENTD_MCP_CONNECT_TIMEOUT"}, File: "mcp_connect_timeout", Default: "30s",
			Doc: "How long a conversation's MCP server may take to start (or be reached) and list its tools, as in OpenHands; a server that takes longer is left out of the conversation, with an event saying so, and tried again at the agent's next run. At most 1h.",
			set: func(c *Config, v string) error { return setDuration(&c.MCPConnectTimeout, v) }},
		{Flag: "mcp-call-timeout", Env: []string{"AGENTD_MCP_CALL_TIMEOUT"}, File: "mcp_call_timeout", Default: "60s",
			Doc: "How long a call to an MCP server's tool may take before the model is told it timed out; a streamable-HTTP server's own timeout (shttp_servers[].timeout) replaces it for that server. At most 1h.",
			set: func(c *Config, v string) error { return setDuration(&c.MCPCallTimeout, v) }},
		{Flag: "sandbox-memory-mb", Env: []string{"AGENTD_SANDBOX_MEMORY_MB"}, File: "sandbox_memory_mb", Default: "2048",
			Doc: "Memory limit (MiB, swap included) of the default spec, and of every spec that sets none; 0 means none.",
			set: func(c *Config, v string) error { return setInt64(&c.SandboxLimits.MemoryMB, v) }},
		{Flag: "sandbox-cpus", Env: []string{"AGENTD_SANDBOX_CPUS"}, File: "sandbox_cpus", Default: "1",
			Doc: "CPU share (in CPUs, e.g. 0.5) of the default spec, and of every spec that sets none; 0 means none.",
			set: func(c *Config, v string) error { return setFloat(&c.SandboxLimits.CPUs, v) }},
		{Flag: "sandbox-pids", Env: []string{"AGENTD_SANDBOX_PIDS"}, File: "sandbox_pids", Default: "1024",
			Doc: "Most processes and threads of a sandbox of the default spec, and of every spec that sets none; 0 means none.",
			set: func(c *Config, v string) error { return setInt64(&c.SandboxLimits.PIDs, v) }},
		{Flag: "sandbox-tmp-mb", Env: []string{"AGENTD_SANDBOX_TMP_MB"}, File: "sandbox_tmp_mb", Default: "512",
			Doc: "Size (MiB) of the private /tmp of the default spec's sandboxes, and of every spec that sets none; it counts against the memory limit. 0 leaves it to the backend (bwrap: half the memory limit).",
			set: func(c *Config, v string) error { return setInt64(&c.SandboxLimits.TmpMB, v) }},
		{Flag: "sandbox-max-memory-mb", Env: []string{"AGENTD_SANDBOX_MAX_MEMORY_MB"}, File: "sandbox_max_memory_mb", Default: "8192",
			Doc: "Ceiling of every spec's memory limit (MiB): a spec above it is refused at start-up; 0 means no ceiling.",
			set: func(c *Config, v string) error { return setInt64(&c.SandboxMaxLimits.MemoryMB, v) }},
		{Flag: "sandbox-max-cpus", Env: []string{"AGENTD_SANDBOX_MAX_CPUS"}, File: "sandbox_max_cpus", Default: "4",
			Doc: "Ceiling of every spec's CPU share; 0 means no ceiling.",
			set: func(c *Config, v string) error { return setFloat(&c.SandboxMaxLimits.CPUs, v) }},
		{Flag: "sandbox-max-pids", Env: []string{"AGENTD_SANDBOX_MAX_PIDS"}, File: "sandbox_max_pids", Default: "4096",
			Doc: "Ceiling of every spec's process limit; 0 means no ceiling.",
			set: func(c *Config, v string) error { return setInt64(&c.SandboxMaxLimits.PIDs, v) }},
		{Flag: "sandbox-max-tmp-mb", Env: []string{"AGENTD_SANDBOX_MAX_TMP_MB"}, File: "sandbox_max_tmp_mb", Default: "4096",
			Doc: "Ceiling of every spec's /tmp size (MiB); 0 means no ceiling.",
			set: func(c *Config, v string) error { return setInt64(&c.SandboxMaxLimits.TmpMB, v) }},
		{Flag: "sandbox-uid", Env: []string{"AGENTD_SANDBOX_UID"}, File: "sandbox_uid", Default: "2000000000",
			Doc: "Host uid and gid that the commands of every bwrap and docker sandbox run as (a docker container's init and runtime are root with a few capabilities): unprivileged, never 0, and used by nothing else on the machine. Files that sandboxes create in their workspaces belong to it.",
			set: func(c *Config, v string) error { return setInt(&c.SandboxUID, v) }},
		{Flag: "webhook-timeout", Env: []string{"AGENTD_WEBHOOK_TIMEOUT"}, File: "webhook_timeout", Default: "10s",
			Doc: "How long one webhook delivery attempt may take, connection included; a slower endpoint counts as failed for that attempt and is tried again later. Deliveries never hold up a conversation.",
			set: func(c *Config, v string) error { return setDuration(&c.WebhookTimeout, v) }},
		{Flag: "webhook-first-retry", Env: []string{"AGENTD_WEBHOOK_FIRST_RETRY"}, File: "webhook_first_retry", Default: "10s",
			Doc: "Wait after a webhook delivery's first failed attempt; each later wait doubles, up to an hour.",
			set: func(c *Config, v string) error { return setDuration(&c.WebhookFirstRetry, v) }},
		{Flag: "webhook-retry-for", Env: []string{"AGENTD_WEBHOOK_RETRY_FOR"}, File: "webhook_retry_for", Default: "24h",
			Doc: "How long a webhook delivery is retried, from its first attempt (or its redelivery), before it is marked failed.",
			set: func(c *Config, v string) error { return setDuration(&c.WebhookRetryFor, v) }},
		{Flag: "git-clone-timeout", Env: []string{"AGENTD_GIT_CLONE_TIMEOUT"}, File: "git_clone_timeout", Default: "10m",
			Doc: "How long the clone of a conversation's repository may take before its start fails; at most 1h.",
			set: func(c *Config, v string) error { return setDuration(&c.GitCloneTimeout, v) }},
		{Flag: "setup-script-timeout", Env: []string{"AGENTD_SETUP_SCRIPT_TIMEOUT"}, File: "setup_script_timeout", Default: "10m",
			Doc: "How long a repository's .openhands/setup.sh may run when its conversation starts; it is stopped then, and the conversation starts anyway (as in OpenHands, which allows 600 s). At most 1h.",
			set: func(c *Config, v string) error { return setDuration(&c.SetupScriptTimeout, v) }},
		{Flag: "git-author-name", Env: []string{"AGENTD_GIT_AUTHOR_NAME"}, File: "git_author_name", Default: "openhands",
			Doc: "Author name of the commits agents make in a repository, for users whose settings (git_user_name) and git provider name none; the provider's login comes first.",
			set: func(c *Config, v string) error { c.GitAuthorName = strings.TrimSpace(v); return nil }},
		{Flag: "git-author-email", Env: []string{"AGENTD_GIT_AUTHOR_EMAIL"}, File: "git_author_email", Default: "openhands@all-hands.dev",
			Doc: "Author e-mail of those commits, for users whose settings (git_user_email) and git provider name none.",
			set: func(c *Config, v string) error { c.GitAuthorEmail = strings.TrimSpace(v); return nil }},
		{Flag: "memory-limit", Env: []string{"AGENTD_MEMORY_LIMIT"}, File: "memory_limit", Default: "auto",
			Doc: "Soft limit of the server's resident memory, e.g. 512MiB or 2GiB; auto for 90% of the memory limit of the cgroup the server runs in (a container's), or none when it has none; off for none. It counts what a container's limit counts: the Go runtime's memory, SQLite's page caches and the pages of the server's executable it has mapped in. Every half second the server sets the Go runtime's own soft limit to this less what it holds outside the runtime's memory (never below a quarter of it). Near it the garbage collector runs more often and returns freed memory to the system sooner; it is not a hard cap: a server that needs more takes more, at the cost of more collection. When GOMEMLIMIT is set in the environment, the server leaves the Go runtime's limit to it and sets none of its own; setting this too is refused, as the two would fight.",
			set: func(c *Config, v string) error {
				if strings.TrimSpace(v) == "auto" {
					c.MemoryLimit = MemoryLimitAuto
					return nil
				}
				return setBytes(&c.MemoryLimit, v)
			}},
		{Flag: "sqlite-cache-size", Env: []string{"AGENTD_SQLITE_CACHE_SIZE"}, File: "sqlite_cache_size", Default: "4MiB",
			Doc: "Page cache of the SQLite database, e.g. 4MiB, shared equally by its connections: one writer and a reader for each CPU (at least four). It is memory outside the Go heap (--memory-limit counts it too), and the process holds up to about twice it, as SQLite's allocator rounds each page up; the caches are emptied once no conversation has run for 5 s. Pages not in it are read from the operating system's file cache; a reader's pages last only until the next write.",
			set: func(c *Config, v string) error {
				if strings.TrimSpace(v) == "off" {
					return fmt.Errorf("%q: the SQLite cache cannot be off; give a size such as 4MiB", v)
				}
				return setBytes(&c.SQLiteCacheBytes, v)
			}},
		{Flag: "listing-cache-size", Env: []string{"AGENTD_LISTING_CACHE_SIZE"}, File: "listing_cache_size", Default: "2MiB",
			Doc: "Events, start tasks, sandboxes and conversations the store keeps in memory from its listings, e.g. 2MiB, or off: a page listed again is then read from the database as its rows' keys and versions alone (events never change once stored; a start task, a sandbox or a conversation is read again once it changed, through any replica, a conversation also once its sandbox or start task did), rather than row by row with every column; on SQLite, while nothing was written to the database, a page listed again is not read at all. The least recently listed go first; SQLite's is emptied once no conversation has run for 5 s. The API keeps as much again of the conversations and start tasks it listed, as the bytes it answered them with, by the same versions (a row listed again unchanged is not encoded again); off with it.",
			set: func(c *Config, v string) error { return setBytes(&c.ListingCacheBytes, v) }},
		{Flag: "conversation-titles", Env: []string{"AGENTD_CONVERSATION_TITLES"}, File: "conversation_titles", Default: "model",
			Doc: "How a conversation the user did not name is named once its agent first runs: model (the conversation's own model writes a short title from the first message, as OpenHands does; the call is bounded to 30 s and 48 tokens, runs beside the agent, and its cost counts in the conversation's metrics; if it fails, the start of the message is the title), message (the start of the first message, no model call) or off (\"Conversation <id>\"). A title the user set is never replaced.",
			set: func(c *Config, v string) error {
				c.ConversationTitles = strings.ToLower(strings.TrimSpace(v))
				return nil
			}},
		{Flag: "log-level", Env: []string{"AGENTD_LOG_LEVEL"}, File: "log_level", Default: "info",
			Doc: "Log level: debug, info, warn or error.",
			set: func(c *Config, v string) error { c.LogLevel = v; return nil }},
		{Flag: "log-format", Env: []string{"AGENTD_LOG_FORMAT"}, File: "log_format", Default: "text",
			Doc: "Log format: text or json.",
			set: func(c *Config, v string) error { c.LogFormat = v; return nil }},
	}
}

func trimURL(v string) string { return strings.TrimRight(strings.TrimSpace(v), "/") }

func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimRight(strings.TrimSpace(p), "/"); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func setInt(dst *int, v string) error {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return fmt.Errorf("%q is not a whole number", v)
	}
	*dst = n
	return nil
}

// setPools reads warm pool sizes: comma-separated entries, "n" for the default spec ("" in
// the map) or "spec=n".
func setPools(dst *map[string]int, v string) error {
	out := map[string]int{}
	for e := range strings.SplitSeq(v, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		spec, n, ok := strings.Cut(e, "=")
		if !ok {
			spec, n = "", e
		}
		spec = strings.TrimSpace(spec)
		size, err := strconv.Atoi(strings.TrimSpace(n))
		if err != nil || size < 0 || size > maxPool {
			return fmt.Errorf("pool %q: want a size from 0 to %d", e, maxPool)
		}
		if ok && spec == "" {
			return fmt.Errorf("pool %q: no spec before =", e)
		}
		if _, dup := out[spec]; dup {
			return fmt.Errorf("pool %q: that spec's pool is sized twice", e)
		}
		if size > 0 {
			out[spec] = size
		}
	}
	*dst = out
	return nil
}

// maxPool bounds one warm pool: pooled sandboxes hold memory and processes for nobody yet.
const maxPool = 100

// setPrefixes reads comma-separated address prefixes; a bare address is a prefix of one.
func setPrefixes(dst *[]netip.Prefix, v string) error {
	var out []netip.Prefix
	for s := range strings.SplitSeq(v, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !strings.Contains(s, "/") {
			a, err := netip.ParseAddr(s)
			if err != nil {
				return fmt.Errorf("%q is neither an address nor a prefix", s)
			}
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return fmt.Errorf("%q is not an address prefix: %w", s, err)
		}
		out = append(out, p.Masked())
	}
	*dst = out
	return nil
}

func setInt64(dst *int64, v string) error {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return fmt.Errorf("%q is not a whole number", v)
	}
	*dst = n
	return nil
}

func setFloat(dst *float64, v string) error {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		return fmt.Errorf("%q is not a number", v)
	}
	*dst = f
	return nil
}

// setBytes reads a size as GOMEMLIMIT writes it: a whole number of bytes with an optional
// unit (B, KiB, MiB, GiB, TiB), or off (0).
func setBytes(dst *int64, v string) error {
	v = strings.TrimSpace(v)
	if v == "off" {
		*dst = 0
		return nil
	}
	num, mult := v, int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"B", 1}} {
		if n, ok := strings.CutSuffix(v, u.suffix); ok {
			num, mult = n, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return fmt.Errorf("%q is not a size such as 96MiB or 2GiB, or off", v)
	}
	*dst = n * mult
	return nil
}

func setDuration(dst *time.Duration, v string) error {
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil {
		return fmt.Errorf("%q is not a duration such as 30s or 2m", v)
	}
	*dst = d
	return nil
}

// Load builds the configuration of `agentd serve` from args (without the subcommand), the
// environment read through getenv, and the config file named by --config or AGENTD_CONFIG.
func Load(args []string, getenv func(string) string) (Config, error) {
	opts := Options()
	fs := flag.NewFlagSet("agentd serve", flag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	flagVals := make(map[string]*string, len(opts))
	for _, o := range opts {
		flagVals[o.Flag] = fs.String(o.Flag, o.Default, o.Doc)
	}
	configFile := fs.String("config", "", "TOML config file (also AGENTD_CONFIG).")
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	setFlags := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { setFlags[f.Name] = true })

	var c Config
	c.ConfigFile = *configFile
	if c.ConfigFile == "" {
		c.ConfigFile = getenv("AGENTD_CONFIG")
	}
	file := map[string]string{}
	if c.ConfigFile != "" {
		var err error
		file, c.Specs, err = readFile(c.ConfigFile, opts)
		if err != nil {
			return Config{}, err
		}
	}
	explicit := map[string]string{} // option → where a value other than the default came from
	for _, o := range opts {
		v, from := o.Default, "default"
		if fv, ok := file[o.File]; ok {
			v, from = fv, "config file key "+o.File
		}
		for i := len(o.Env) - 1; i >= 0; i-- { // the canonical name wins over aliases
			if ev := getenv(o.Env[i]); ev != "" {
				v, from = ev, o.Env[i]
			}
		}
		if setFlags[o.Flag] {
			v, from = *flagVals[o.Flag], "--"+o.Flag
		}
		if err := o.set(&c, v); err != nil {
			return Config{}, fmt.Errorf("%s: %w", from, err)
		}
		if from != "default" {
			explicit[o.Flag] = from
		}
	}
	if c.GoMemLimit = strings.TrimSpace(getenv("GOMEMLIMIT")); c.GoMemLimit != "" {
		if from, ok := explicit["memory-limit"]; ok {
			return Config{}, fmt.Errorf("%s and GOMEMLIMIT are both set: GOMEMLIMIT bounds the Go runtime's memory, %s the server's resident memory by moving the runtime's limit; set one of them", from, from)
		}
		c.MemoryLimit = 0
	}
	if err := c.validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

func readFile(path string, opts []Option) (map[string]string, []SpecConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read config file: %w", err)
	}
	var raw map[string]any
	_, err = toml.Decode(string(data), &raw)
	if err != nil {
		return nil, nil, fmt.Errorf("config file %s: %w", path, err)
	}
	known := map[string]bool{"sandbox_specs": true}
	for _, o := range opts {
		known[o.File] = true
	}
	out := map[string]string{}
	for k, v := range raw {
		if !known[k] {
			return nil, nil, fmt.Errorf("config file %s: unknown key %q", path, k)
		}
		if k == "sandbox_specs" {
			continue
		}
		out[k] = fmt.Sprint(v)
	}
	var specs struct {
		Specs []SpecConfig `toml:"sandbox_specs"`
	}
	smd, err := toml.Decode(string(data), &specs)
	if err != nil {
		return nil, nil, fmt.Errorf("config file %s: sandbox_specs: %w", path, err)
	}
	for _, k := range smd.Undecoded() {
		if len(k) > 0 && k[0] == "sandbox_specs" {
			return nil, nil, fmt.Errorf("config file %s: unknown key %q", path, k.String())
		}
	}
	return out, specs.Specs, nil
}

func (c *Config) validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		errs = append(errs, fmt.Errorf("addr %q: want host:port", c.Addr))
	}
	if _, port, err := net.SplitHostPort(c.AdminAddr); c.AdminAddr != "" && err != nil {
		errs = append(errs, fmt.Errorf("admin addr %q: want host:port", c.AdminAddr))
	} else if c.AdminAddr == c.Addr && port != "0" {
		errs = append(errs, fmt.Errorf("admin addr %q: the main server listens there", c.AdminAddr))
	}
	switch c.SandboxBackend {
	case "auto", "process", "bwrap", "docker":
	case "kubernetes":
		if c.KubernetesRuntimeImage == "" {
			errs = append(errs, errors.New("sandbox backend kubernetes: kubernetes runtime image (agentd's image) is required"))
		}
	default:
		errs = append(errs, fmt.Errorf("sandbox backend %q: want auto, process, bwrap, docker or kubernetes", c.SandboxBackend))
	}
	switch c.KubernetesReach {
	case "auto", "ip", "port-forward":
	default:
		errs = append(errs, fmt.Errorf("kubernetes reach %q: want auto, ip or port-forward", c.KubernetesReach))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log level %q: want debug, info, warn or error", c.LogLevel))
	}
	switch c.LLMProvider {
	case "", "openai", "anthropic":
	default:
		errs = append(errs, fmt.Errorf("llm provider %q: want openai or anthropic", c.LLMProvider))
	}
	if c.LLMBaseURL != "" && !strings.HasPrefix(c.LLMBaseURL, "http://") && !strings.HasPrefix(c.LLMBaseURL, "https://") {
		errs = append(errs, fmt.Errorf("llm base url %q: want an http(s) URL", c.LLMBaseURL))
	}
	for _, u := range []struct{ name, v string }{{"github api url", c.GitHubAPIURL}, {"gitlab api url", c.GitLabAPIURL}, {"bitbucket api url", c.BitbucketAPIURL}} {
		if pu, err := url.Parse(u.v); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			errs = append(errs, fmt.Errorf("%s %q: want an http(s) URL", u.name, u.v))
		}
	}
	switch c.ConversationTitles {
	case "model", "message", "off":
	default:
		errs = append(errs, fmt.Errorf("conversation titles %q: want model, message or off", c.ConversationTitles))
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		errs = append(errs, fmt.Errorf("log format %q: want text or json", c.LogFormat))
	}
	if c.MaxRunningSandboxes < 0 {
		errs = append(errs, errors.New("max running sandboxes must not be negative"))
	}
	if c.SandboxIdleTimeout < 0 {
		errs = append(errs, errors.New("sandbox idle timeout must not be negative"))
	}
	if c.SessionTTL <= 0 {
		errs = append(errs, errors.New("session ttl must be positive"))
	}
	if c.SandboxStartTimeout <= 0 {
		errs = append(errs, errors.New("sandbox start timeout must be positive"))
	}
	if c.SandboxOrphanGrace <= 0 {
		errs = append(errs, errors.New("sandbox orphan grace must be positive"))
	}
	if c.RequestBodyTimeout <= 0 {
		errs = append(errs, errors.New("request body timeout must be positive"))
	}
	if c.StreamMaxSubscribers < 1 {
		errs = append(errs, errors.New("stream max subscribers must be at least 1"))
	}
	if c.StreamBuffer < 1 {
		errs = append(errs, errors.New("stream buffer must be at least 1"))
	}
	if c.StreamHeartbeat < time.Second {
		errs = append(errs, errors.New("stream heartbeat must be at least 1s"))
	}
	if c.MaxUploadMB <= 0 || c.MaxUploadMB > 4096 {
		errs = append(errs, fmt.Errorf("max upload %d MiB: want 1 to 4096 (the runtime's own bound)", c.MaxUploadMB))
	}
	if _, err := netpolicy.New(c.AllowInternal); err != nil {
		errs = append(errs, fmt.Errorf("allow internal: %w", err))
	}
	if c.TerminalNoChangeTimeout <= 0 {
		errs = append(errs, errors.New("terminal no-change timeout must be positive"))
	}
	if c.TerminalMaxWait <= 0 {
		errs = append(errs, errors.New("terminal max wait must be positive"))
	}
	if c.WebhookTimeout <= 0 || c.WebhookFirstRetry <= 0 || c.WebhookRetryFor <= 0 {
		errs = append(errs, errors.New("webhook timeout, first retry and retry-for must be positive"))
	}
	// The runtime takes MCP time bounds up to an hour.
	if c.MCPConnectTimeout <= 0 || c.MCPConnectTimeout > time.Hour {
		errs = append(errs, errors.New("mcp connect timeout must be positive and at most 1h"))
	}
	if c.MCPCallTimeout <= 0 || c.MCPCallTimeout > time.Hour {
		errs = append(errs, errors.New("mcp call timeout must be positive and at most 1h"))
	}
	// The runtime runs no command for longer than an hour.
	if c.GitCloneTimeout <= 0 || c.GitCloneTimeout > time.Hour {
		errs = append(errs, errors.New("git clone timeout must be positive and at most 1h"))
	}
	if c.SetupScriptTimeout <= 0 || c.SetupScriptTimeout > time.Hour {
		errs = append(errs, errors.New("setup script timeout must be positive and at most 1h"))
	}
	seen := map[string]bool{}
	for i, s := range c.Specs {
		switch {
		case s.ID == "":
			errs = append(errs, fmt.Errorf("sandbox_specs[%d]: id is required", i))
		case seen[s.ID]:
			errs = append(errs, fmt.Errorf("sandbox_specs[%d]: duplicate id %q", i, s.ID))
		}
		seen[s.ID] = true
		switch s.Network {
		case "", "egress", "none", "host":
		default:
			errs = append(errs, fmt.Errorf("sandbox_specs[%d]: network %q: want egress, none or host", i, s.Network))
		}
		errs = append(errs, checkLimits(fmt.Sprintf("sandbox_specs[%d] (%s): limits", i, s.ID), s.Limits, c.SandboxMaxLimits)...)
	}
	errs = append(errs, checkLimits("the default sandbox limits (sandbox_memory_mb and the like)", c.SandboxLimits, c.SandboxMaxLimits)...)
	errs = append(errs, checkLimits("the sandbox limit ceiling (sandbox_max_memory_mb and the like)", c.SandboxMaxLimits, LimitsConfig{})...)
	if c.SandboxUID <= 0 || c.SandboxUID >= 1<<32-1 {
		errs = append(errs, fmt.Errorf("sandbox uid %d: want an unprivileged uid, above 0 and below 4294967295", c.SandboxUID))
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("data dir must not be empty"))
	} else if abs, err := filepath.Abs(c.DataDir); err == nil {
		c.DataDir = abs
	}
	errs = append(errs, c.checkDatabase())
	if c.KeyringReload < 100*time.Millisecond {
		errs = append(errs, errors.New("keyring reload must be at least 100ms"))
	}
	if c.LeaseTTL < time.Second {
		errs = append(errs, errors.New("conversation lease must be at least 1s"))
	}
	if c.NodeName == "" {
		host, _ := os.Hostname()
		c.NodeName = DefaultNodeName(host, c.DataDir)
	} else if !validNodeName(c.NodeName) {
		errs = append(errs, fmt.Errorf("node name %q: want 1 to 253 letters, digits, dots, dashes and underscores", c.NodeName))
	}
	if c.PublicURL == "" {
		c.PublicURL = localURL(c.Addr)
	}
	errs = append(errs, c.agentServer())
	return errors.Join(errs...)
}

// Postgres reports whether the database is a PostgreSQL URL rather than sqlite.
func (c Config) Postgres() bool { return c.Database != DatabaseSQLite }

// DatabaseSQLite is the Database of a server on the SQLite store in its data directory.
const DatabaseSQLite = "sqlite"

// checkDatabase accepts sqlite or a postgres:// (postgresql://) URL. Its error never shows
// the URL, which may hold a password.
func (c *Config) checkDatabase() error {
	if c.Database == DatabaseSQLite {
		return nil
	}
	u, err := url.Parse(c.Database)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return errors.New("database: want sqlite or a PostgreSQL URL (postgres://user:password@host:5432/dbname)")
	}
	return nil
}

// DefaultNodeName is the node name of a server on host with data directory dataDir: the
// host's name (its first label, in lower case) and the first 8 hex digits of the data
// directory's SHA-256, so that two servers on one machine get two names and a restarted
// server its old one.
func DefaultNodeName(host, dataDir string) string {
	host, _, _ = strings.Cut(strings.ToLower(host), ".")
	host = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, host)
	if host == "" {
		host = "node"
	}
	sum := sha256.Sum256([]byte(dataDir))
	return host + "-" + hex.EncodeToString(sum[:4])
}

func validNodeName(s string) bool {
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// Bound is the configuration of a server that listens on addr and, when it has an
// agent-server base, on agentAddr. An address whose port was 0 (the system picks one) becomes
// the one bound, and so does a public URL that was made from it: a URL whose port is 0
// reaches nobody.
func (c Config) Bound(addr, agentAddr string) Config {
	rebind := func(configured, url *string, bound string) {
		if _, port, _ := net.SplitHostPort(*configured); port != "0" {
			return
		}
		if *url == localURL(*configured) {
			*url = localURL(bound)
		}
		*configured = bound
	}
	rebind(&c.Addr, &c.PublicURL, addr)
	if c.AgentServerAddr != "" {
		rebind(&c.AgentServerAddr, &c.AgentServerPublicURL, agentAddr)
	}
	return c
}

// localURL is the URL of a listen address for a client on this machine.
func localURL(addr string) string {
	host, port, _ := net.SplitHostPort(addr)
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// agentServer resolves the agent-server address ("auto", "off" or host:port) and its
// public URL.
func (c *Config) agentServer() error {
	switch c.AgentServerAddr {
	case "off", "":
		c.AgentServerAddr, c.AgentServerPublicURL = "", ""
		return nil
	case "auto":
		host, port, err := net.SplitHostPort(c.Addr)
		if err != nil {
			return nil // reported for addr
		}
		p, err := strconv.Atoi(port)
		switch {
		case err != nil:
			return fmt.Errorf("agent server addr auto: addr %q has no numeric port: set agent_server_addr", c.Addr)
		case p == 0:
			// A port the system picks for the main listener: the same for this one.
		case p >= 65535:
			return fmt.Errorf("agent server addr auto: addr %q leaves no next port: set agent_server_addr", c.Addr)
		default:
			p++
		}
		c.AgentServerAddr = net.JoinHostPort(host, strconv.Itoa(p))
	default:
		if _, _, err := net.SplitHostPort(c.AgentServerAddr); err != nil {
			return fmt.Errorf("agent server addr %q: want host:port, auto or off", c.AgentServerAddr)
		}
	}
	if _, port, _ := net.SplitHostPort(c.Addr); c.AgentServerAddr == c.Addr && port != "0" {
		return fmt.Errorf("agent server addr %q: the main server listens there", c.AgentServerAddr)
	}
	if c.AgentServerPublicURL == "" {
		c.AgentServerPublicURL = localURL(c.AgentServerAddr)
	}
	return nil
}
