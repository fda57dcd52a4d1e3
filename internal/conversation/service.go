package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/internal/agent"
	"github.com/agentd/agentd/internal/confirm"
	"github.com/agentd/agentd/internal/event"
	"github.com/agentd/agentd/internal/id"
	"github.com/agentd/agentd/internal/llm"
	"github.com/agentd/agentd/internal/logctx"
	"github.com/agentd/agentd/internal/netpolicy"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/runtime/runtimeclient"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/secret"
	"github.com/agentd/agentd/internal/skill"
	"github.com/agentd/agentd/internal/webhook"
)

// Sandboxes is what the conversation service needs of the sandbox service.
type Sandboxes interface {
	// StartSettling starts a sandbox; settled tells it that the start task is done setting
	// the sandbox up (a warm pool refills after that).
	StartSettling(ctx context.Context, ownerID, specID string) (sb sandbox.Sandbox, settled func(), err error)
	Get(ctx context.Context, ownerID, id string) (sandbox.Sandbox, error)
	Resume(ctx context.Context, ownerID, id string) error
	WaitRunning(ctx context.Context, ownerID, id string) (sandbox.Sandbox, error)
	Delete(ctx context.Context, ownerID, id string) error
	// Hold marks the sandbox in use (so it is never paused for being idle) until release.
	Hold(id string) (release func())
	// SessionKey returns the key the sandbox's runtime demands.
	SessionKey(ctx context.Context, ownerID, id string) (string, error)
	// Reaches reports whether this replica reaches the runtimes of sandboxes of backend on
	// node: those of its own node, or of a backend every replica reaches.
	Reaches(node, backend string) bool
	// CheckRuntime looks at a sandbox whose runtime did not answer: one whose processes are
	// gone becomes ERROR at once. It returns a sandbox.ErrState error when the sandbox can no
	// longer be used, and nil when it still runs.
	CheckRuntime(ctx context.Context, ownerID, id string) error
}

// Options configure a Service.
type Options struct {
	Store     Store
	Sandboxes Sandboxes
	Sealer    secret.Sealer
	Logger    *slog.Logger
	Now       func() time.Time
	NewID     func() string
	// StartTimeout bounds a start task's wait for its sandbox.
	StartTimeout time.Duration

	// Events reads the event logs; Bus tells live readers about appends.
	Events event.Store
	Bus    event.Bus
	// Settings are the users' settings (their LLM); LLM the server's defaults.
	Settings UserSettings
	LLM      LLMDefaults
	// NewLLM makes a model client for a configuration: the caller picks the adapters. Retry
	// is the retry policy wrapped around every client.
	NewLLM func(llm.Config) (llm.Client, error)
	Retry  llm.RetryPolicy
	// UserHTTP returns the HTTP client for the URLs a user chose (their llm_base_url): the
	// URL policy's client for that user, which refuses internal addresses unless the user may
	// reach them. nil means the policy without an allow-list, for admins too.
	UserHTTP func(ctx context.Context, userID string) (*http.Client, error)
	// MCP bounds the conversations' MCP servers' start and calls; zero means the runtime's
	// defaults.
	MCP MCPOptions
	// Runtimes returns the runtime of a RUNNING sandbox.
	Runtimes func(ctx context.Context, ownerID, sandboxID string) (Runtime, error)
	Agent    AgentOptions
	// AgentObserver is told of every agent step and tool call, for the server's metrics;
	// nil tells nobody.
	AgentObserver agent.Observer
	// OnIdle, when set, is called each time the service has ended its last running agent
	// loop and start task (Busy turned false), from the goroutine that ended it: it must
	// not block.
	OnIdle func()
	// Terminal bounds the waits of the agents' terminal calls, sent with each call; nil
	// leaves them to the runtime.
	Terminal *runtimeclient.TerminalWaits
	// Secrets list the users' secrets (settings, provider tokens, custom secrets), which
	// every event is masked for; call SecretsChanged when they change.
	Secrets []SecretSource
	// CustomSecrets are the users' stored secrets, which conversations name for their agent's
	// commands; nil means there are none.
	CustomSecrets CustomSecrets
	// NewEventID returns event ids; nil means dashed random UUIDs.
	NewEventID func() string
	// Skills keeps the users' skills and those each conversation starts with; nil gives
	// conversations no skills.
	Skills skill.Store
	// PullRequestOpen says whether a pull request of a repository is open, with the owner's
	// provider token; MicroagentConversations leaves out conversations whose last one is
	// not. nil keeps them all.
	PullRequestOpen func(ctx context.Context, ownerID, provider, repository string, number int) (bool, error)
	// Remotes resolve the conversations' repositories upstream and Git opens the sandboxes'
	// git channels (see repository.go); with either nil, a conversation on a repository is
	// refused (ErrNoRepositories). Repository tunes the repository steps of a start.
	Remotes    Remotes
	Git        GitChannels
	Repository RepositoryOptions
	// Providers reach the users' git providers: the agent's provider tools, the content of
	// suggested tasks. nil gives agents no provider tools and suggested tasks no content.
	Providers Providers
	// Webhooks is told of the conversations' transitions; nil tells no one.
	Webhooks Notifier
	// Titles says how conversations the user did not name are named (TitlesModel,
	// TitlesMessage); empty or TitlesOff keeps "Conversation <id>".
	Titles string

	// Replica is this replica's id, which its leases name (owner.go); empty means Node and a
	// random suffix. Node is the node it runs on; empty means "local". LeaseTTL is how long
	// a lease lives unrenewed; zero means DefaultLeaseTTL. Waker carries the wake-ups of
	// commands between replicas; nil means a replica alone on its store, which wakes itself.
	Replica  string
	Node     string
	LeaseTTL time.Duration
	Waker    Waker
	// Keys reports the keys of the server's keyring and the one it seals with, which the
	// replica's heartbeat tells the others (agentd keyring activate waits for every replica
	// to hold a key); nil tells none.
	Keys func() (ids []string, active string)
	// Alone says that no other replica works on the store (SQLite, in a data directory only
	// this process opens): leases then matter only across restarts, so the replica looks for
	// work to take over and commands only at each renewal, renews only while it runs
	// something, and sends no heartbeat.
	Alone bool
}

// Service creates conversations and runs their start tasks in the background. Start tasks are
// owned by the service: Close cancels and waits for them, and Resume picks up those a previous
// process left unfinished. Safe for concurrent use.
type Service struct {
	o   Options
	log *slog.Logger

	ctx    context.Context // parent of every start task; cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	tasks map[string]context.CancelFunc // conversation id → its start task's cancel
	loops map[string]*loop              // conversation id → its agent loop
	// deleting counts the deletions in progress per conversation id: no loop starts for a
	// conversation while it is being deleted.
	deleting map[string]int
	// settling counts the tasks and loops that ended and are releasing their conversation's
	// lease (settle): Busy until they have.
	settling int

	// leaseMu makes a lease's release (settle: nothing runs here, so free it) and a claim
	// followed by what then runs under it (a loop, a start task) exclusive per conversation,
	// so that a release never frees the lease of a loop that started meanwhile. Striped by
	// conversation id; taken before mu.
	leaseMu [16]sync.Mutex

	// confirmMu serializes the answers to pending actions (a response, a message, a pause),
	// so that no action is answered twice.
	confirmMu sync.Mutex

	// metricsMu guards live (the conversations' usage while model calls are under way, see
	// usage.go) and titling (the conversations being named).
	metricsMu sync.Mutex
	live      map[string]*liveMetrics
	titling   map[string]bool

	// watchMu guards watches: start task id → the watches of its states.
	watchMu sync.Mutex
	watches map[string][]*TaskWatch

	red redactors

	waker Waker
	// stopOwn ends the ownership goroutine (own) that Resume starts; ownDone is closed when
	// it has ended.
	stopOwn context.CancelFunc
	ownDone chan struct{}
}

// NewService returns a Service.
func NewService(o Options) *Service {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.NewID == nil {
		o.NewID = id.New
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 2 * time.Minute
	}
	if o.NewEventID == nil {
		o.NewEventID = id.Ordered
	}
	if o.Bus == nil {
		o.Bus = &event.LocalBus{}
	}
	if o.UserHTTP == nil {
		strict, _ := netpolicy.New(nil) // an empty allow-list cannot be wrong
		o.UserHTTP = func(context.Context, string) (*http.Client, error) { return strict.Client(false), nil }
	}
	if o.NewLLM == nil {
		o.NewLLM = func(llm.Config) (llm.Client, error) { return nil, errors.New("no LLM adapters configured") }
	}
	if o.Node == "" {
		o.Node = "local"
	}
	if o.Replica == "" {
		o.Replica = o.Node + "/" + id.New()
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	var waker Waker = newLocalWaker()
	if o.Waker != nil {
		waker = o.Waker
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Service{o: o, log: o.Logger, ctx: ctx, cancel: cancel,
		tasks: map[string]context.CancelFunc{}, loops: map[string]*loop{}, deleting: map[string]int{},
		live: map[string]*liveMetrics{}, titling: map[string]bool{}, watches: map[string][]*TaskWatch{},
		waker: waker}
}

// Close stops taking over conversations, cancels running start tasks and agent loops, waits
// for them and releases their leases. Their state stays stored, so the next process (or
// another replica, at once) continues them. Safe to call twice.
func (s *Service) Close() {
	s.mu.Lock()
	stop, done := s.stopOwn, s.ownDone
	s.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
	s.cancel()
	s.wg.Wait()
	if stop != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.o.Store.RemoveReplica(ctx, s.o.Replica); err != nil {
			s.log.Warn("remove this replica from the store", "err", err)
		}
	}
}

// CreateRequest is a validated request to create a conversation, from either API generation.
type CreateRequest struct {
	// ID is the requested conversation id; empty means a new random one.
	ID        string
	Version   string
	SandboxID string
	SpecID    string

	InitialText string
	ImageURLs   []string

	Title              string
	SelectedRepository *string
	SelectedBranch     *string
	GitProvider        *string
	Trigger            *string
	PRNumbers          []int
	LLMModel           *string
	ParentID           *string
	Public             *bool
	Tags               map[string]string

	// ReplayJSON is a recorded trajectory to replay (V0); its first message becomes the
	// initial message, and the conversation needs no LLM settings.
	ReplayJSON *string

	// ConfirmationPolicy is the policy the conversation starts with; nil takes the parent's,
	// else the one the owner's settings choose.
	ConfirmationPolicy *confirm.Policy

	// SecretNames name the owner's stored secrets that the agent's commands get; each must
	// exist. InlineSecrets are more, given with their values (name to value). LookupSecrets
	// map names to secrets of the sandbox (SandboxID) to take, as SecretsUpdate.Lookups.
	SecretNames   []string
	InlineSecrets map[string]string
	LookupSecrets map[string]string

	// LLMAPIKey and LLMBaseURL are the LLM a client says the agent is to use (OpenHands' SDK
	// sends its agent's whole LLM). The agent runs with its owner's LLM settings, so these,
	// when set, must be those settings' (a *FieldError otherwise).
	LLMAPIKey  *string
	LLMBaseURL *string

	// Raw is the request body as received; it is stored sealed.
	Raw []byte
	// TaskRequest is the V1 start request echoed by the start task, its secrets masked:
	// it is stored as it is, unsealed, and shown to the owner.
	TaskRequest json.RawMessage
}

// FieldError says which request field is wrong (it names something that does not exist, or
// holds a value that cannot be), and why. A nested field's path is joined by dots.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// Create stores a conversation with its start task and first message, and starts the task in
// the background. It returns at once.
func (s *Service) Create(ctx context.Context, ownerID string, r CreateRequest) (View, StartTask, error) {
	return s.create(ctx, ownerID, r, nil)
}

// CreateWatched is Create, with a watch of the start task's states from its first save on.
// The caller stops the watch.
func (s *Service) CreateWatched(ctx context.Context, ownerID string, r CreateRequest) (StartTask, *TaskWatch, error) {
	var w *TaskWatch
	_, task, err := s.create(ctx, ownerID, r, &w)
	return task, w, err
}

func (s *Service) create(ctx context.Context, ownerID string, r CreateRequest, watch **TaskWatch) (View, StartTask, error) {
	now := s.o.Now().UTC()
	convID := r.ID
	if convID == "" {
		convID = s.o.NewID()
	}
	var parent View
	var parentPtr *View
	if r.ParentID != nil {
		var err error
		parent, err = s.o.Store.GetConversation(ctx, ownerID, *r.ParentID)
		if errors.Is(err, ErrNotFound) {
			return View{}, StartTask{}, &FieldError{Field: "parent_conversation_id", Msg: "parent conversation not found"}
		}
		if err != nil {
			return View{}, StartTask{}, fmt.Errorf("create conversation: %w", err)
		}
		parentPtr = &parent
		// A sub-conversation shares its parent's sandbox and repository unless told otherwise.
		if r.SandboxID == "" {
			r.SandboxID = parent.SandboxID
		}
		r.SelectedRepository = orPtr(r.SelectedRepository, parent.SelectedRepository)
		r.SelectedBranch = orPtr(r.SelectedBranch, parent.SelectedBranch)
		r.GitProvider = orPtr(r.GitProvider, parent.GitProvider)
		r.LLMModel = orPtr(r.LLMModel, parent.LLMModel)
	}
	secretNames, secretsSealed, err := s.secretsOf(ctx, ownerID, r)
	if err != nil {
		return View{}, StartTask{}, err
	}
	if r.ParentID != nil && len(secretNames) == 0 {
		// A sub-conversation's agent works beside its parent's, with its secrets.
		secretNames, secretsSealed = parent.SecretNames, parent.SecretsSealed
	}
	if r.ReplayJSON != nil {
		rp, err := agent.ParseReplay(*r.ReplayJSON)
		if err != nil {
			return View{}, StartTask{}, &FieldError{Field: "replay_json", Msg: strings.TrimPrefix(err.Error(), agent.ErrBadReplay.Error()+": ")}
		}
		r.InitialText, r.ImageURLs = rp.Text, rp.ImageURLs
	} else if _, _, err := s.resolveLLM(ctx, ownerID, r.LLMModel); err != nil {
		return View{}, StartTask{}, err
	}
	if err := s.checkStatedLLM(ctx, ownerID, r.LLMAPIKey, r.LLMBaseURL); err != nil {
		return View{}, StartTask{}, err
	}
	if deref(r.SelectedRepository) != "" && (s.o.Remotes == nil || s.o.Git == nil) {
		return View{}, StartTask{}, ErrNoRepositories
	}
	if r.SandboxID != "" {
		if _, err := s.o.Sandboxes.Get(ctx, ownerID, r.SandboxID); errors.Is(err, sandbox.ErrNotFound) {
			return View{}, StartTask{}, &FieldError{Field: "sandbox_id", Msg: "sandbox not found"}
		} else if err != nil {
			return View{}, StartTask{}, fmt.Errorf("create conversation: %w", err)
		}
	}
	policy, err := s.confirmationPolicy(ctx, ownerID, r.ConfirmationPolicy, parentPtr)
	if err != nil {
		return View{}, StartTask{}, fmt.Errorf("create conversation: %w", err)
	}
	title := r.Title
	if title == "" {
		title = defaultTitle(convID)
	}
	sealed, err := s.o.Sealer.Seal(r.Raw)
	if err != nil {
		return View{}, StartTask{}, fmt.Errorf("create conversation: seal request: %w", err)
	}
	c := Conversation{
		ID: convID, OwnerID: ownerID, SandboxID: r.SandboxID, Version: r.Version, Title: title,
		SelectedRepository: r.SelectedRepository, SelectedBranch: r.SelectedBranch,
		GitProvider: r.GitProvider, Trigger: r.Trigger, PRNumbers: r.PRNumbers, LLMModel: r.LLMModel,
		ParentID: r.ParentID, RequestSealed: sealed, CreatedAt: now, UpdatedAt: now,
		SecretNames: secretNames, SecretsSealed: secretsSealed, ConfirmationPolicy: policy,
		Public: r.Public, Tags: r.Tags, TitleByUser: r.Title != "",
	}
	if c.Version == V1 {
		// OpenHands' current agents work in /workspace/project; its V0 ones in the workspace.
		c.WorkDir = ProjectDir
	}
	if c.Tags == nil {
		c.Tags = map[string]string{}
	}
	if c.PRNumbers == nil {
		c.PRNumbers = []int{}
	}
	task := StartTask{
		ID: s.o.NewID(), OwnerID: ownerID, Status: TaskWorking, ConversationID: convID,
		SandboxID: r.SandboxID, Request: r.TaskRequest, CreatedAt: now, UpdatedAt: now,
	}
	var first []event.Event
	if !policy.IsNever() {
		// In the log too: the agent reads its policy there.
		ev, err := event.NewStateUpdate(id.Ordered(), now, event.StateConfirmationPolicy, policy)
		if err != nil {
			return View{}, StartTask{}, err
		}
		ev.ConversationID = convID
		first = append(first, ev)
	}
	if r.InitialText != "" || len(r.ImageURLs) > 0 {
		ev, err := event.NewUserMessage(id.Ordered(), now, r.InitialText, r.ImageURLs)
		if err != nil {
			return View{}, StartTask{}, err
		}
		ev.ConversationID = convID
		first = append(first, ev)
	}
	if err := s.redact(ctx, c, first); err != nil {
		return View{}, StartTask{}, fmt.Errorf("create conversation: %w", err)
	}
	// The start task runs here, under this replica's lease, which the conversation is created
	// with: another replica that looks for work finds it held.
	claim := Claim{Holder: s.o.Replica, Node: s.o.Node, TTL: s.o.LeaseTTL}
	if err := s.o.Store.CreateConversation(ctx, c, task, first, claim); err != nil {
		return View{}, StartTask{}, fmt.Errorf("create conversation: %w", err)
	}
	logctx.Add(ctx, slog.String("conversation_id", convID))
	if watch != nil {
		*watch = s.watchTask(task.ID)
	}
	unlock := s.lockLease(convID)
	s.launch(task, r.SpecID, logctx.Attrs(ctx)...)
	unlock()
	s.notify(ctx, webhook.KindConversationCreated, c, map[string]any{"title": c.Title,
		"selected_repository": c.SelectedRepository, "selected_branch": c.SelectedBranch, "version": c.Version})
	return View{Conversation: c, SandboxStatus: sandbox.StatusMissing, TaskStatus: task.Status}, task, nil
}

func orPtr(a, b *string) *string {
	if a != nil {
		return a
	}
	return b
}

// Resume starts the replica's part in the ownership of conversations (owner.go): it frees the
// leases of this node's earlier run, takes the conversations that need a runner and that it
// reaches (start tasks a previous process left unfinished, messages waiting, agent loops it
// left running), and goes on doing so, and acting on commands, until Close.
func (s *Service) Resume(ctx context.Context) error {
	n, err := s.o.Store.ReleaseNodeLeases(ctx, s.o.Node, s.o.Replica)
	if err != nil {
		return fmt.Errorf("resume conversations: %w", err)
	}
	if n > 0 {
		s.log.Info("freed the leases of this node's earlier run", "leases", n, "node", s.o.Node)
	}
	s.heartbeat(ctx)
	s.takeOver(ctx)
	ownCtx, stop := context.WithCancel(s.ctx)
	done := make(chan struct{})
	s.mu.Lock()
	s.stopOwn, s.ownDone = stop, done
	s.mu.Unlock()
	go func() {
		defer close(done)
		s.own(ownCtx)
	}()
	return nil
}

// Get returns one of the owner's conversations with its sub-conversations.
func (s *Service) Get(ctx context.Context, ownerID, id string) (View, error) {
	vs, err := s.GetMany(ctx, ownerID, []string{id})
	if err != nil {
		return View{}, err
	}
	if vs[0] == nil {
		return View{}, ErrNotFound
	}
	return *vs[0], nil
}

// GetMany returns the conversations with those ids in order, with their sub-conversations;
// nil where the owner has none.
func (s *Service) GetMany(ctx context.Context, ownerID string, ids []string) ([]*View, error) {
	out := make([]*View, len(ids))
	var found []string
	for i, cid := range ids {
		v, err := s.o.Store.GetConversation(ctx, ownerID, cid)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[i] = &v
		found = append(found, cid)
	}
	subs, err := s.o.Store.SubConversationIDs(ctx, ownerID, found)
	if err != nil {
		return nil, err
	}
	for _, v := range out {
		if v != nil {
			v.SubConversationIDs = subs[v.ID]
		}
	}
	return out, nil
}

// Search pages through the owner's conversations, newest first.
func (s *Service) Search(ctx context.Context, ownerID string, f Filter, q paging.Query) ([]View, string, error) {
	return s.o.Store.ListConversations(ctx, ownerID, f, q)
}

// SearchVersions pages through the owner's conversations as Search does, naming each by its
// version alone; At reads the conversations at such versions (Store.ListConversationVersions,
// Store.ConversationsAt).
func (s *Service) SearchVersions(ctx context.Context, ownerID string, f Filter, q paging.Query) ([]paging.Listed, string, error) {
	return s.o.Store.ListConversationVersions(ctx, ownerID, f, q)
}

func (s *Service) At(ctx context.Context, ownerID string, ls []paging.Listed) ([]View, error) {
	return s.o.Store.ConversationsAt(ctx, ownerID, ls)
}

// Count counts the owner's conversations that match f.
func (s *Service) Count(ctx context.Context, ownerID string, f Filter) (int, error) {
	return s.o.Store.CountConversations(ctx, ownerID, f)
}

// GetTask returns one of the owner's start tasks.
func (s *Service) GetTask(ctx context.Context, ownerID, id string) (StartTask, error) {
	return s.o.Store.GetStartTask(ctx, ownerID, id)
}

// SearchTasks pages through the owner's start tasks.
func (s *Service) SearchTasks(ctx context.Context, ownerID string, f TaskFilter, sort TaskSort, q paging.Query) ([]StartTask, string, error) {
	return s.o.Store.ListStartTasks(ctx, ownerID, f, sort, q)
}

// SearchTaskVersions and TasksAt are SearchTasks in two halves, as SearchVersions and At are
// Search (Store.ListStartTaskVersions, Store.StartTasksAt).
func (s *Service) SearchTaskVersions(ctx context.Context, ownerID string, f TaskFilter, sort TaskSort, q paging.Query) ([]paging.Listed, string, error) {
	return s.o.Store.ListStartTaskVersions(ctx, ownerID, f, sort, q)
}

func (s *Service) TasksAt(ctx context.Context, ownerID string, ls []paging.Listed) ([]StartTask, error) {
	return s.o.Store.StartTasksAt(ctx, ownerID, ls)
}

// CountTasks counts the owner's start tasks that match f.
func (s *Service) CountTasks(ctx context.Context, ownerID string, f TaskFilter) (int, error) {
	return s.o.Store.CountStartTasks(ctx, ownerID, f)
}

// Patch changes the owner's conversation's metadata and returns it as it is now.
func (s *Service) Patch(ctx context.Context, ownerID, id string, p Patch) (View, error) {
	if err := s.o.Store.PatchConversation(ctx, ownerID, id, p, s.o.Now().UTC()); err != nil {
		return View{}, err
	}
	return s.Get(ctx, ownerID, id)
}

// Delete removes a conversation, its start tasks and events, deletes its sandbox, and ends
// its live event streams.
func (s *Service) Delete(ctx context.Context, ownerID, id string) error {
	v, err := s.o.Store.GetConversation(ctx, ownerID, id)
	if err != nil {
		return err
	}
	// From here no loop starts for it (a start task finishing, a message sent meanwhile):
	// one would run against a sandbox being deleted until its appends found the
	// conversation gone.
	s.mu.Lock()
	s.deleting[id]++
	if cancel, ok := s.tasks[id]; ok {
		cancel()
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.deleting[id]--; s.deleting[id] == 0 {
			delete(s.deleting, id)
		}
		s.mu.Unlock()
	}()
	s.stopLoop(id)
	// Read the sandbox id again: a start task cancelled just now may have set it.
	if cur, err := s.o.Store.GetConversation(ctx, ownerID, id); err == nil {
		v = cur
	}
	if v.SandboxID != "" {
		err := s.o.Sandboxes.Delete(context.WithoutCancel(ctx), ownerID, v.SandboxID)
		if err != nil && !errors.Is(err, sandbox.ErrNotFound) {
			return fmt.Errorf("delete conversation %s: %w", id, err)
		}
	}
	if err := s.o.Store.DeleteConversation(context.WithoutCancel(ctx), ownerID, id); err != nil {
		return fmt.Errorf("delete conversation %s: %w", id, err)
	}
	s.forgetRedactor(id)
	s.o.Bus.End(id)
	return nil
}
