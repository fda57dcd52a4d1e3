package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"

	"github.com/agentd/agentd/internal/apitypes"
	"github.com/agentd/agentd/internal/conversation"
	"github.com/agentd/agentd/internal/paging"
	"github.com/agentd/agentd/internal/sandbox"
	"github.com/agentd/agentd/internal/store/listingcache"
)

// sessionKey opens a sealed sandbox key, but only for a RUNNING sandbox: clients get a key
// exactly when there is a runtime to use it on.
func (a *API) sessionKey(status sandbox.Status, sealed []byte) *string {
	if status != sandbox.StatusRunning || len(sealed) == 0 {
		return nil
	}
	if k, ok := a.keys.get(sealed); ok {
		return &k
	}
	plain, err := a.d.Open(sealed)
	if err != nil {
		a.log.Error("open sandbox session key", "err", err)
		return nil
	}
	s := string(plain)
	a.keys.put(sealed, s)
	return &s
}

func (a *API) sandboxInfo(sb sandbox.Sandbox) apitypes.SandboxInfo {
	info := apitypes.SandboxInfo{
		ID: sb.ID, CreatedByUserID: optString(sb.OwnerID), SandboxSpecID: sb.SpecID,
		Status: apitypes.SandboxStatus(sb.Status), CreatedAt: sb.CreatedAt, Backend: sb.Backend,
		Detail: optString(sb.Detail),
	}
	if sb.Status == sandbox.StatusRunning {
		info.SessionAPIKey = a.sessionKey(sb.Status, sb.SessionKeySealed)
		u := a.agentServerURL(sb.ID)
		info.ExposedURLs = []apitypes.ExposedURL{{Name: "AGENT_SERVER", URL: u, Port: urlPort(u)}}
	}
	return info
}

// urlPort is the port of a URL this server made, 80 or 443 when it names none.
func urlPort(raw string) int {
	u, err := url.Parse(raw)
	if err != nil {
		return 0
	}
	if p, err := strconv.Atoi(u.Port()); err == nil {
		return p
	}
	if u.Scheme == "https" {
		return 443
	}
	return 80
}

func (a *API) specInfo(s sandbox.Spec) apitypes.SandboxSpecInfo {
	env := s.InitialEnv
	if env == nil {
		env = map[string]string{}
	}
	network := sandbox.NetworkOf(s)
	return apitypes.SandboxSpecInfo{
		ID: s.ID, Command: s.Command, CreatedAt: s.CreatedAt, InitialEnv: env, WorkingDir: s.WorkingDir,
		Description: s.Description, Image: s.Image, Rootfs: s.Rootfs, Network: network,
		Limits: apitypes.SandboxLimits{MemoryBytes: s.Limits.MemoryBytes, CPUs: s.Limits.CPUs,
			PIDs: s.Limits.PIDs, DiskBytes: s.Limits.DiskBytes, TmpBytes: s.Limits.TmpBytes},
		Warnings: a.d.SpecWarnings(s),
	}
}

func providerPtr(s *string) *apitypes.ProviderType {
	if s == nil {
		return nil
	}
	p := apitypes.ProviderType(*s)
	return &p
}

func triggerPtr(s *string) *apitypes.ConversationTrigger {
	if s == nil {
		return nil
	}
	t := apitypes.ConversationTrigger(*s)
	return &t
}

func (a *API) appConversation(v conversation.View) apitypes.AppConversation {
	return a.appConversationWith(v, a.decodedMetrics.get(v.Metrics))
}

// appConversationWith is appConversation with the conversation's metrics decoded already.
func (a *API) appConversationWith(v conversation.View, m *decodedMetrics) apitypes.AppConversation {
	c := v.Conversation
	out := apitypes.AppConversation{
		ID: c.ID, CreatedByUserID: optString(c.OwnerID), SandboxID: c.SandboxID,
		SelectedRepository: c.SelectedRepository, SelectedBranch: c.SelectedBranch,
		GitProvider: providerPtr(c.GitProvider), Title: optString(c.Title), Trigger: triggerPtr(c.Trigger),
		PRNumber: c.PRNumbers, LLMModel: c.LLMModel, ParentConversationID: c.ParentID,
		SubConversationIDs: orEmpty(v.SubConversationIDs), CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
		SandboxStatus:       apitypes.SandboxStatus(v.SandboxStatus),
		SessionAPIKey:       a.sessionKey(v.SandboxStatus, v.SandboxKeySealed),
		ConversationStatus:  apitypes.ConversationStatus(conversation.StatusOf(v)),
		ConversationVersion: c.Version,
		AgentKind:           "openhands", Public: c.Public, Tags: c.Tags,
		WaitingForNode: optString(c.WaitingForNode),
	}
	if out.Tags == nil {
		out.Tags = map[string]string{}
	}
	if out.PRNumber == nil {
		out.PRNumber = []int{}
	}
	if m != nil {
		out.Metrics = &m.snapshot
	}
	// As in OpenHands, the agent's status and the conversation API are there while the
	// sandbox runs.
	if v.SandboxStatus == sandbox.StatusRunning && c.SandboxID != "" {
		status := apitypes.ExecutionStatus(c.ExecutionStatus)
		if status == "" {
			status = "idle"
		}
		out.ExecutionStatus = &status
		out.ConversationURL = ptr(a.conversationURL(c.SandboxID, c.ID))
	}
	return out
}

// metricsOf decodes stored metrics; nil when there are none. The answers share what it
// returns, which nothing changes.
func (a *API) metricsOf(raw json.RawMessage) *apitypes.MetricsSnapshot {
	if m := a.decodedMetrics.get(raw); m != nil {
		return &m.snapshot
	}
	return nil
}

// maxDecodedMetrics and maxDecodedMetricsBytes bound metricsCache: a few pages of listings
// of many users. Metrics are small, but their model name and response id come from users and
// their models' servers, so their bytes are bounded too.
const (
	maxDecodedMetrics      = 4096
	maxDecodedMetricsBytes = 8 << 20
)

// metricsCache keeps the metrics recently decoded, by their stored JSON: a listing sends the
// metrics of a hundred conversations, most of which have not changed since the last listing,
// and decoding them was a fifth of its time. The zero value is ready.
type metricsCache struct {
	mu    sync.Mutex
	m     map[string]*decodedMetrics
	bytes int // of the entries' keys and encodings
}

// decodedMetrics are stored metrics decoded, and encoded again as the answers write them.
type decodedMetrics struct {
	snapshot apitypes.MetricsSnapshot
	encoded  []byte
}

// get returns raw decoded, or nil when it is empty or does not decode.
func (c *metricsCache) get(raw json.RawMessage) *decodedMetrics {
	if len(raw) == 0 {
		return nil
	}
	c.mu.Lock()
	m, ok := c.m[string(raw)]
	c.mu.Unlock()
	if ok {
		return m
	}
	m = &decodedMetrics{}
	if json.Unmarshal(raw, &m.snapshot) != nil {
		return nil
	}
	var buf bytes.Buffer
	if appendJSON(&buf, &m.snapshot) != nil {
		return nil
	}
	m.encoded = buf.Bytes()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*decodedMetrics{}
	}
	size := 2*len(raw) + len(m.encoded) // the key, the decoded strings, the encoding
	if _, ok := c.m[string(raw)]; !ok {
		if len(c.m) >= maxDecodedMetrics || c.bytes+size > maxDecodedMetricsBytes {
			clear(c.m) // simpler than an LRU, and as good for what listings read again
			c.bytes = 0
		}
		c.bytes += size
	}
	c.m[string(raw)] = m
	return m
}

func (c *metricsCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m, c.bytes = nil, 0
}

func (a *API) conversationInfo(v conversation.View) apitypes.ConversationInfo {
	c := v.Conversation
	status := conversation.StatusOf(v)
	info := apitypes.ConversationInfo{
		ConversationID: c.ID, Title: c.Title, LastUpdatedAt: c.UpdatedAt,
		Status: apitypes.ConversationStatus(status), SelectedRepository: c.SelectedRepository,
		SelectedBranch: c.SelectedBranch, GitProvider: providerPtr(c.GitProvider),
		Trigger: triggerPtr(c.Trigger), SessionAPIKey: a.sessionKey(v.SandboxStatus, v.SandboxKeySealed),
		CreatedAt: c.CreatedAt, PRNumber: c.PRNumbers, ConversationVersion: c.Version,
		SubConversationIDs: orEmpty(v.SubConversationIDs), WaitingForNode: optString(c.WaitingForNode),
	}
	if info.PRNumber == nil {
		info.PRNumber = []int{}
	}
	if status == conversation.StatusRunning {
		// As OpenHands derives it from the agent's execution status.
		info.RuntimeStatus = ptr("STATUS$READY")
		if c.ExecutionStatus == "error" || c.ExecutionStatus == "stuck" {
			info.RuntimeStatus = ptr("STATUS$ERROR")
		}
		if c.SandboxID != "" {
			info.URL = ptr(a.conversationURL(c.SandboxID, c.ID))
		}
	}
	return info
}

// startTask shows a task; a READY one carries the agent server's URL, as OpenHands fills it.
func (a *API) startTask(t conversation.StartTask) apitypes.AppConversationStartTask {
	out := apitypes.AppConversationStartTask{
		ID: t.ID, CreatedByUserID: optString(t.OwnerID), Status: apitypes.StartTaskStatus(t.Status),
		Detail: optString(t.Detail), SandboxID: optString(t.SandboxID),
		AgentServerURL: optString(t.AgentServerURL), CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt,
	}
	if t.Status == conversation.TaskReady {
		out.AppConversationID = optString(t.ConversationID)
		if out.AgentServerURL == nil && t.SandboxID != "" {
			out.AgentServerURL = ptr(a.agentServerURL(t.SandboxID))
		}
	}
	// Stored as the start request marshalled (pr_number always a list), the echo is written
	// as it is.
	out.Request = apitypes.StartRequestEcho(t.Request)
	return out
}

// appendStartTask appends the task as an apitypes.AppConversationStartTask, its fields in
// order but its stored request spliced in as it is and last: through encoding/json the
// request, most of a task's bytes, would be read again to be compacted (a third of a task
// listing's cost), and the other fields found through reflection (as much again).
func (a *API) appendStartTask(buf *bytes.Buffer, t conversation.StartTask) {
	task := a.startTask(t)
	buf.WriteString(`{"id":`)
	appendJSONString(buf, task.ID)
	appendJSONField(buf, "created_by_user_id", task.CreatedByUserID)
	buf.WriteString(`,"status":`)
	appendJSONString(buf, string(task.Status))
	appendJSONField(buf, "detail", task.Detail)
	appendJSONField(buf, "app_conversation_id", task.AppConversationID)
	appendJSONField(buf, "sandbox_id", task.SandboxID)
	appendJSONField(buf, "agent_server_url", task.AgentServerURL)
	appendJSONTime(buf, "created_at", task.CreatedAt)
	appendJSONTime(buf, "updated_at", task.UpdatedAt)
	req, _ := task.Request.MarshalJSON() // never fails
	buf.WriteString(`,"request":`)
	buf.Write(req)
	buf.WriteByte('}')
}

// appendAppConversation appends v as encoding/json writes a.appConversation(v), and reports
// whether what it appended is what v encodes to for as long as the server runs: not when v's
// sandbox session key could not be opened.
func (a *API) appendAppConversation(buf *bytes.Buffer, v conversation.View) (lasting bool) {
	m := a.decodedMetrics.get(v.Metrics)
	metrics := []byte("null")
	if m != nil {
		metrics = m.encoded
	}
	c := a.appConversationWith(v, m)
	appendAppConversation(buf, c, metrics)
	return keyShown(v.SandboxStatus, v.SandboxKeySealed, c.SessionAPIKey)
}

// keyShown reports whether key is what an answer shows of a sandbox's session key (sealed,
// of a sandbox in status) for as long as the server runs: not when the key of a running
// sandbox could not be opened.
func keyShown(status sandbox.Status, sealed []byte, key *string) bool {
	return key != nil || status != sandbox.StatusRunning || len(sealed) == 0
}

// The shapes a.encoded keeps a listed conversation in, as the Seq of its key there (a
// conversation's own key has none).
const (
	shapeAppConversation  int64 = iota // apitypes.AppConversation (V1)
	shapeConversationInfo              // apitypes.ConversationInfo (V0)
)

// listed is a kind of listed row as writeListed writes it: table is how the listing cache
// names its rows and their versions (listingcache.ListedRow), shape the shape its encodings
// are kept in (the Seq of their keys in a.encoded), and encode appends a row's encoding and
// reports whether it is what the row encodes to for as long as the server runs (keyShown).
type listed[T any] struct {
	table  listingcache.Table[string, T]
	kind   listingcache.Kind
	shape  int64
	encode func(a *API, buf *bytes.Buffer, row *T) bool
}

// key names a row's encoding in a.encoded, by the row's id.
func (l listed[T]) key(id string) listingcache.Key {
	return listingcache.Key{Kind: l.kind, Seq: l.shape, ID: id}
}

// The kinds of listed rows.
var (
	// listedAppConversations: apitypes.AppConversation (V1).
	listedAppConversations = listed[conversation.View]{table: listingcache.Conversations, kind: listingcache.KindConversation,
		shape:  shapeAppConversation,
		encode: func(a *API, buf *bytes.Buffer, v *conversation.View) bool { return a.appendAppConversation(buf, *v) },
	}
	// listedStartTasks: apitypes.AppConversationStartTask.
	listedStartTasks = listed[conversation.StartTask]{table: listingcache.Tasks, kind: listingcache.KindTask,
		encode: func(a *API, buf *bytes.Buffer, t *conversation.StartTask) bool {
			a.appendStartTask(buf, *t)
			return true
		},
	}
	// listedSandboxes: apitypes.SandboxInfo.
	listedSandboxes = listed[sandbox.Sandbox]{table: listingcache.Sandboxes, kind: listingcache.KindSandbox,
		encode: func(a *API, buf *bytes.Buffer, sb *sandbox.Sandbox) bool {
			info := a.sandboxInfo(*sb)
			appendSandbox(buf, info)
			return keyShown(sb.Status, sb.SessionKeySealed, info.SessionAPIKey)
		},
	}
	// listedConversationInfos: apitypes.ConversationInfo (V0), as encoding/json writes it.
	listedConversationInfos = listed[conversation.View]{table: listingcache.Conversations, kind: listingcache.KindConversation,
		shape: shapeConversationInfo,
		encode: func(a *API, buf *bytes.Buffer, v *conversation.View) bool {
			info := a.conversationInfo(*v)
			appendJSON(buf, info) // of fixed types: never fails
			return keyShown(v.SandboxStatus, v.SandboxKeySealed, info.SessionAPIKey)
		},
	}
)

// writeListed writes a page of rows of kind l, named by their versions ls (as a store's
// listing names them, with the next page's cursor next), as writeList writes a page under
// field. Each row whose encoding a.encoded keeps at its version is written from it, without
// reading the row; the others are read, all in one call of read, encoded, and kept (when their
// encodings last). A row that read leaves out (deleted since it was listed) is left out of the
// page; one read at a newer version is written and kept at that version.
func writeListed[T any](a *API, w http.ResponseWriter, l listed[T], field string, ls []paging.Listed, next string,
	read func([]paging.Listed) ([]T, error)) error {
	rows := make([][]byte, len(ls))
	held := 0
	a.encoded.GetAll(len(ls), func(i int) (listingcache.Key, int64, int64) {
		return l.key(ls[i].ID), ls[i].Created, ls[i].Rev
	}, func(i int, x *listingcache.Entry) {
		rows[i] = x.Row.([]byte)
		held++
	})
	if held < len(ls) {
		missing := make([]paging.Listed, 0, len(ls)-held)
		for i, b := range rows {
			if b == nil {
				missing = append(missing, ls[i])
			}
		}
		fresh, err := read(missing)
		if err != nil {
			return err
		}
		byID := make(map[string][]byte, len(fresh))
		buf := getBuffer()
		for i := range fresh {
			buf.Reset()
			lasting := l.encode(a, buf, &fresh[i])
			b, v := bytes.Clone(buf.Bytes()), listingcache.ListedRow(l.table, &fresh[i])
			byID[v.ID] = b
			if lasting && a.encoded != nil {
				a.encoded.Put(&listingcache.Entry{Key: l.key(v.ID), Created: v.Created, Rev: v.Rev, Row: b, Cost: len(b) + listingcache.EntryOverhead})
			}
		}
		putBuffer(buf)
		for i, b := range rows {
			if b == nil {
				rows[i] = byID[ls[i].ID]
			}
		}
		rows = slices.DeleteFunc(rows, func(b []byte) bool { return b == nil })
	}
	writeList(w, field, len(rows), next, func(buf *bytes.Buffer, i int) { buf.Write(rows[i]) })
	return nil
}

// orEmpty keeps lists serialising as [] rather than null.
func orEmpty(ids []string) []string {
	if ids == nil {
		return []string{}
	}
	return ids
}
