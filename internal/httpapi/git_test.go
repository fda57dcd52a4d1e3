package httpapi_test

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentd/agentd/internal/config"
	"github.com/agentd/agentd/internal/gitproxy/gittest"
	"github.com/agentd/agentd/internal/llm/llmtest"
	"github.com/agentd/agentd/internal/sandbox/hostproc"
)

// gitToken is the provider token of the git tests: it must appear nowhere but upstream.
const gitToken = "ghp_e2eGitTokenMustNeverShow0123456789"

// manyFiles are n files of random (incompressible) content, so that a clone of them takes a
// pack of a few hundred KiB.
func manyFiles(t *testing.T, n int) map[string]string {
	t.Helper()
	files := map[string]string{}
	b := make([]byte, 128)
	for i := range n {
		rand.Read(b)
		files[fmt.Sprintf("src/d%02d/f%04d.txt", i%50, i)] = hex.EncodeToString(b) + "\n"
	}
	return files
}

// widgets makes octo/widgets: main, and a branch dev with a setup script that waits for a
// file the test writes (so that the test sees the step run) and a pre-commit script.
func widgets(t *testing.T, srv *gittest.Server) {
	t.Helper()
	err := srv.Create("octo/widgets",
		gittest.Commit{Files: manyFiles(t, 2000), Message: "many files"},
		gittest.Commit{Branch: "dev", Files: map[string]string{
			".openhands/setup.sh": "echo \"setup ran on $(git rev-parse --abbrev-ref HEAD)\"\n" +
				"until [ -e ../setup-go ]; do sleep 0.02; done\n" +
				"env | sort\n" +
				"echo setup-done > ../setup-marker\n",
			".openhands/pre-commit.sh": "#!/bin/sh\necho pre-commit-ran >> \"$(git rev-parse --git-dir)/pre-commit.log\"\n",
		}},
	)
	if err != nil {
		t.Fatal(err)
	}
}

// TestRepositoryConversation: a conversation on a private repository and branch clones it
// through the proxy (its progress on the start task), runs its setup script (its output in
// the events) and installs its pre-commit hook; the agent commits and pushes a new branch as
// the user's provider login, before and after agentd restarts; and the token is nowhere in
// the events, the server's log, the API's answers, the sandbox's files or the environment of
// its processes.
func TestRepositoryConversation(t *testing.T) {
	srv := gittest.Start(t, gitToken)
	widgets(t, srv)
	e := newEnvGit(t, srv)
	_, alice := e.newUser("alice")
	// The repositories are the user's at the provider, as conversation creation checks.
	e.repo(alice, "github", "octo/widgets")
	push := func(branch string) llmtest.Step {
		return callIn(t, "terminal", func(ws string) map[string]any {
			return map[string]any{"command": "cd " + ws + "/widgets && git checkout -q -b " + branch + " && echo " + branch +
				" > " + branch + ".txt && git add . && git commit -q -m " + branch + " && git push -q origin " + branch + " 2>&1; echo pushed-" + branch}
		})
	}
	e.scripted(alice,
		push("agent-work"),
		llmtest.Calls(llmtest.Call("finish", `{"message":"pushed"}`)),
		push("after-restart"),
		llmtest.Calls(llmtest.Call("finish", `{"message":"pushed again"}`)),
	)

	held, release := srv.HoldPack(256 << 10)
	t.Cleanup(release)
	task := e.startConversation(alice, map[string]any{
		"initial_message":     message("push a branch", true),
		"selected_repository": "octo/widgets", "selected_branch": "dev", "git_provider": "github",
	})
	<-held
	var seen v1Task
	e.eventually("clone progress on the start task", func() bool {
		seen = *e.getTask(alice, task.ID)
		return seen.Status == "PREPARING_REPOSITORY" && seen.Detail != nil &&
			strings.HasPrefix(*seen.Detail, "Cloning octo/widgets: receiving objects ")
	}, func() string { return fmt.Sprintf("%s %v", seen.Status, strOf(seen.Detail)) })
	release()

	e.eventually("the setup script", func() bool {
		seen = *e.getTask(alice, task.ID)
		return seen.Status == "RUNNING_SETUP_SCRIPT"
	}, func() string { return fmt.Sprintf("%s %v", seen.Status, strOf(seen.Detail)) })
	ws := e.projectDir(*seen.SandboxID)
	if err := os.WriteFile(filepath.Join(ws, "setup-go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ready := e.waitTask(alice, task.ID, "READY")
	if ready.Detail != nil && *ready.Detail != "" {
		t.Errorf("READY with detail %q", *ready.Detail)
	}
	conv := e.getConversation(alice, *ready.AppConversationID)
	c := &agentConv{e: e, key: alice, id: conv.ID, sandboxID: conv.SandboxID, url: *conv.ConversationURL, sessionKey: *conv.SessionAPIKey}
	c.waitStatus("finished")

	// The setup script ran on the branch, and is in the log as the environment's command.
	evs := agentEvents(c.events())
	wantLabels(t, evs[:3], "MessageEvent:user", "ActionEvent:terminal", "ObservationEvent:terminal")
	if evs[1].Source != "environment" || !strings.Contains(string(evs[1].Action), ".openhands/setup.sh") {
		t.Errorf("the setup script's action: %s %s", evs[1].Source, evs[1].Action)
	}
	if out := observationText(evs[2]); !strings.Contains(out, "setup ran on dev") {
		t.Errorf("the setup script's output: %q", out)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "setup-marker")); err != nil || string(b) != "setup-done\n" {
		t.Errorf("the setup script did not finish: %q, %v", b, err)
	}

	// The agent's commit went upstream as the user's provider login, through the hook.
	checkPushed := func(branch string) {
		t.Helper()
		got, err := srv.Git("octo/widgets", "log", "-1", "--format=%an <%ae> %s", branch)
		if want := gittest.Author.Name + " <" + gittest.Author.Email + "> " + branch + "\n"; err != nil || got != want {
			t.Fatalf("upstream %s: %q, %v; want %q", branch, got, err, want)
		}
	}
	checkPushed("agent-work")
	if b, err := os.ReadFile(filepath.Join(ws, "widgets", ".git", "pre-commit.log")); err != nil || string(b) != "pre-commit-ran\n" {
		t.Errorf("the pre-commit hook: %q, %v", b, err)
	}
	cfg, err := os.ReadFile(filepath.Join(ws, "widgets", ".git", "config"))
	if err != nil || !strings.Contains(string(cfg), "url = http://127.0.0.1:") || !strings.Contains(string(cfg), "/github/octo/widgets.git") {
		t.Errorf("the clone's remote:\n%s (%v)", cfg, err)
	}

	// agentd restarts; the agent's next push reopens the sandbox's git channel.
	e.restart()
	c.api("POST", "/events", message("push another", true), http.StatusOK, nil)
	c.waitStatus("finished")
	checkPushed("after-restart")

	for _, r := range srv.Requests() {
		if !r.Authorized {
			t.Errorf("a request reached the provider without the token: %+v", r)
		}
	}
	checkNoToken(t, e, c, ws)
}

// checkNoToken fails t if gitToken is in an event, the server's log, an API answer about the
// conversation, a file of the sandbox's workspace, or the environment of a process the
// sandbox can see.
func checkNoToken(t *testing.T, e *env, c *agentConv, ws string) {
	t.Helper()
	var answers []string
	answers = append(answers, string(c.api("GET", "/events/search?limit=100", nil, http.StatusOK, nil)))
	answers = append(answers, string(c.api("GET", "", nil, http.StatusOK, nil)))
	answers = append(answers, string(e.must("GET", "/api/v1/app-conversations?ids="+c.id, c.key, nil, http.StatusOK, nil)))
	answers = append(answers, string(e.must("GET", "/api/v1/app-conversations/start-tasks/search", c.key, nil, http.StatusOK, nil)))
	for _, a := range answers {
		if strings.Contains(a, gitToken) {
			t.Errorf("an API answer holds the token: %.300s", a)
		}
	}
	if strings.Contains(e.logs.String(), gitToken) {
		t.Error("the server's log holds the token")
	}
	err := filepath.WalkDir(ws, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), gitToken) {
			t.Errorf("the sandbox's file %s holds the token", path)
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	// What every process of the sandbox (the runtime's session) was started with.
	runtimePID := e.runtimePID(c.sandboxID)
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	procs := 0
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if st, err := hostproc.ReadStat(pid); err != nil || st.Session != runtimePID {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "environ"))
		if err != nil {
			continue // it exited meanwhile
		}
		procs++
		if strings.Contains(string(b), gitToken) {
			t.Errorf("the environment of the sandbox's process %d holds the token", pid)
		}
	}
	if procs < 2 {
		t.Errorf("found %d processes of the sandbox (the runtime and the agent's shell at least)", procs)
	}
}

// TestRepositoryMissingBranch: a branch the repository lacks fails the start with that detail.
func TestRepositoryMissingBranch(t *testing.T) {
	srv := gittest.Start(t, gitToken)
	if err := srv.Create("octo/small", gittest.Commit{Files: map[string]string{"README.md": "small\n"}}); err != nil {
		t.Fatal(err)
	}
	e := newEnvGit(t, srv)
	_, alice := e.newUser("alice")
	// The repositories are the user's at the provider, as conversation creation checks.
	e.repo(alice, "github", "octo/small")
	e.repo(alice, "github", "octo/absent")
	task := e.startConversation(alice, map[string]any{"selected_repository": "octo/small", "selected_branch": "nope"})
	failed := e.waitTask(alice, task.ID, "ERROR")
	if want := `branch "nope" not found in octo/small`; strOf(failed.Detail) != want {
		t.Fatalf("detail %q, want %q", strOf(failed.Detail), want)
	}

	// A repository the provider lists but whose git server does not have it fails with the
	// provider's words.
	task = e.startConversation(alice, map[string]any{"selected_repository": "octo/absent"})
	failed = e.waitTask(alice, task.ID, "ERROR")
	if want := "repository octo/absent was not found with your git provider tokens"; strOf(failed.Detail) != want {
		t.Fatalf("detail %q, want %q", strOf(failed.Detail), want)
	}
}

// TestRepositorySubConversation: a sub-conversation in its parent's sandbox works on the
// parent's clone without cloning again; one on another repository of the same name is
// refused rather than given the parent's clone.
func TestRepositorySubConversation(t *testing.T) {
	srv := gittest.Start(t, gitToken)
	for _, repo := range []string{"octo/small", "other/small"} {
		if err := srv.Create(repo, gittest.Commit{Files: map[string]string{"README.md": repo + "\n"}}); err != nil {
			t.Fatal(err)
		}
	}
	e := newEnvGit(t, srv)
	_, alice := e.newUser("alice")
	// The repositories are the user's at the provider, as conversation creation checks.
	e.repo(alice, "github", "octo/small")
	e.repo(alice, "github", "other/small")
	parent := e.waitTaskReady(alice, e.startConversation(alice, map[string]any{"selected_repository": "octo/small"}).ID)
	fetches := func() (n int) {
		for _, r := range srv.Requests() {
			if r.Method == "POST" && r.Service == "git-upload-pack" {
				n++
			}
		}
		return n
	}
	before := fetches()
	child := e.waitTaskReady(alice, e.startConversation(alice, map[string]any{"parent_conversation_id": parent}).ID)
	if got := e.getConversation(alice, child); strOf(got.SelectedRepository) != "octo/small" {
		t.Fatalf("the sub-conversation's repository: %q", strOf(got.SelectedRepository))
	}
	if n := fetches(); n != before {
		t.Errorf("the sub-conversation fetched again (%d fetches, %d before)", n, before)
	}
	other := e.startConversation(alice, map[string]any{"parent_conversation_id": parent, "selected_repository": "other/small"})
	failed := e.waitTask(alice, other.ID, "ERROR")
	if want := "the workspace has small already, a clone of another repository than other/small"; strOf(failed.Detail) != want {
		t.Fatalf("detail %q, want %q", strOf(failed.Detail), want)
	}
}

// TestRepositorySetupTimeout: a setup script that runs past its bound is stopped, says so in
// its observation, and the conversation starts anyway.
func TestRepositorySetupTimeout(t *testing.T) {
	srv := gittest.Start(t, gitToken)
	if err := srv.Create("octo/slow", gittest.Commit{Files: map[string]string{".openhands/setup.sh": "echo starting\nsleep 600\n"}}); err != nil {
		t.Fatal(err)
	}
	// The bound leaves the script room to print its first line first: at a sandbox's CPU
	// weight, on a machine kept busy, starting bash took more than a second.
	e := newEnvGit(t, srv, func(c *config.Config) { c.SetupScriptTimeout = 5 * time.Second })
	_, alice := e.newUser("alice")
	// The repositories are the user's at the provider, as conversation creation checks.
	e.repo(alice, "github", "octo/slow")
	id := e.waitTaskReady(alice, e.startConversation(alice, map[string]any{"selected_repository": "octo/slow"}).ID)
	conv := e.getConversation(alice, id)
	c := &agentConv{e: e, key: alice, id: id, sandboxID: conv.SandboxID, url: *conv.ConversationURL, sessionKey: *conv.SessionAPIKey}
	evs := agentEvents(c.events())
	if len(evs) < 2 || evs[1].Kind != "ObservationEvent" {
		t.Fatalf("events %q", labels(evs))
	}
	var obs struct {
		Timeout  bool `json:"timeout"`
		Metadata struct {
			Suffix string `json:"suffix"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(evs[1].Observation, &obs); err != nil {
		t.Fatal(err)
	}
	if out := observationText(evs[1]); out != "starting\n" || !obs.Timeout || !strings.Contains(obs.Metadata.Suffix, "stopped after 5s") {
		t.Fatalf("the setup script's observation: %q, %+v", out, obs)
	}
}

// TestRepositorySetupAfterRestart: a restart of agentd while the setup script runs resumes the
// start, which runs the script again under the action already recorded: the log holds the
// script once, with one result.
func TestRepositorySetupAfterRestart(t *testing.T) {
	srv := gittest.Start(t, gitToken)
	widgets(t, srv) // its setup script waits for ../setup-go
	e := newEnvGit(t, srv)
	_, alice := e.newUser("alice")
	e.repo(alice, "github", "octo/widgets")
	e.scripted(alice, llmtest.Calls(llmtest.Call("finish", `{"message":"done"}`)))
	task := e.startConversation(alice, map[string]any{
		"initial_message":     message("look around", true),
		"selected_repository": "octo/widgets", "selected_branch": "dev", "git_provider": "github",
	})
	var seen v1Task
	e.eventually("the setup script", func() bool {
		seen = *e.getTask(alice, task.ID)
		return seen.Status == "RUNNING_SETUP_SCRIPT"
	}, func() string { return fmt.Sprintf("%s %v", seen.Status, strOf(seen.Detail)) })
	e.restart()
	ws := e.projectDir(*seen.SandboxID)
	if err := os.WriteFile(filepath.Join(ws, "setup-go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ready := e.waitTask(alice, task.ID, "READY")
	conv := e.getConversation(alice, *ready.AppConversationID)
	c := &agentConv{e: e, key: alice, id: conv.ID, sandboxID: conv.SandboxID, url: *conv.ConversationURL, sessionKey: *conv.SessionAPIKey}
	c.waitStatus("finished")
	var setup []string
	for _, ev := range c.events() {
		if ev.Source == "environment" && ev.ToolName == "terminal" {
			setup = append(setup, ev.Kind)
		}
	}
	if strings.Join(setup, ",") != "ActionEvent,ObservationEvent" {
		t.Fatalf("the setup script's events: %v, want one action and its observation\n%v", setup, labels(c.events()))
	}
}
