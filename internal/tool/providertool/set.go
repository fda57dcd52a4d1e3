package providertool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/agentd/agentd/internal/gitprovider"
	"github.com/agentd/agentd/internal/tool"
)

// Options say whose provider tools a Set holds.
type Options struct {
	// Provider is the user's name of the provider (github, gitlab, bitbucket, enterprise_sso)
	// and Family the API its host speaks (gitprovider.FamilyGitHub, ...).
	Provider, Family string
	// Repository is the conversation's repository, the only one the tools act on.
	Repository string
	// API returns the user's account at the provider. It is called for every tool call, so
	// that a token the user replaced is used from the next call on.
	API func(ctx context.Context) (gitprovider.API, error)
	// Opened is told the number of every pull (merge) request a tool opened. It runs even
	// when ctx ended after the provider answered, so that no opened request goes unrecorded.
	Opened func(ctx context.Context, number int) error
	Logger *slog.Logger
}

// Set is the provider tools of one conversation. Safe for concurrent use.
type Set struct {
	o     Options
	words Words
	tools []tool.Tool
}

// New returns the tools for o. ErrBadRepository (a *gitprovider.Error) when the repository
// name is not one a provider could hold.
func New(o Options) (*Set, error) {
	repo, err := gitprovider.CleanRepository(o.Repository)
	if err != nil {
		return nil, err
	}
	o.Repository = repo
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Set{o: o, words: WordsFor(o.Family)}
	w := s.words
	repoDoc := map[string]string{"repository": fmt.Sprintf("The repository, %s: the only one these tools act on. May be left out.", repo)}
	if w.Issues {
		s.tools = append(s.tools, tool.New(ReadIssueTool, readIssueDescription(w, repo), tool.ControlPlane, true, Kind, ReadIssueArgs{}).
			WithParamDocs(repoDoc))
	}
	readDocs := map[string]string{"number": fmt.Sprintf("The %s's number (%s%s1 is 1).", w.Request, w.Short, w.Sigil)}
	for k, v := range repoDoc {
		readDocs[k] = v
	}
	s.tools = append(s.tools,
		tool.New(w.ReadRequestTool(), readRequestDescription(w, repo), tool.ControlPlane, true, Kind, ReadRequestArgs{}).
			WithParamDocs(readDocs),
		tool.New(w.CreateRequestTool(), createRequestDescription(w, repo), tool.ControlPlane, false, Kind, CreateRequestArgs{}).
			WithParamDocs(repoDoc))
	return s, nil
}

// Words are the provider's words.
func (s *Set) Words() Words { return s.words }

// Repository is the repository the tools act on, as the provider writes it.
func (s *Set) Repository() string { return s.o.Repository }

// Tools returns the tools, in the order they are offered to the model.
func (s *Set) Tools() []tool.Tool { return append([]tool.Tool(nil), s.tools...) }

// Lookup returns the tool called name.
func (s *Set) Lookup(name string) (tool.Tool, bool) {
	for _, t := range s.tools {
		if t.Name == name {
			return t, true
		}
	}
	return tool.Tool{}, false
}

// Run runs one tool call. Whatever the provider answers is a Result, failures included (an
// error Result the model reads); an error return means only that ctx ended first.
func (s *Set) Run(ctx context.Context, name string, args json.RawMessage) (tool.Result, error) {
	t, ok := s.Lookup(name)
	if !ok {
		return s.failure(name, 0, fmt.Sprintf("Tool %q is not one of the %s tools.", name, s.words.Provider)), nil
	}
	dst := t.NewArgs()
	if err := t.DecodeArgs(args, dst); err != nil {
		var ae *tool.ArgsError
		if errors.As(err, &ae) {
			return s.failure(name, 0, ae.Error()), nil
		}
		return tool.Result{}, err
	}
	var res tool.Result
	switch a := dst.(type) {
	case *ReadIssueArgs:
		res = s.readIssue(ctx, a)
	case *ReadRequestArgs:
		res = s.readRequest(ctx, a)
	case *CreateRequestArgs:
		res = s.createRequest(ctx, a)
	}
	if ctx.Err() != nil && res.IsError {
		return tool.Result{}, ctx.Err()
	}
	return res, nil
}

// ours checks that a repository named in a call is the conversation's; "" is.
func (s *Set) ours(name string) (string, bool) {
	if strings.TrimSpace(name) == "" {
		return "", true
	}
	clean, err := gitprovider.CleanRepository(name)
	if err != nil || !strings.EqualFold(clean, s.o.Repository) {
		return fmt.Sprintf("This conversation works on the repository %s only: the %s tools cannot act on %s. Leave repository out, or name %s.",
			s.o.Repository, s.words.Provider, strings.TrimSpace(name), s.o.Repository), false
	}
	return "", true
}

func (s *Set) api(ctx context.Context) (gitprovider.API, error) { return s.o.API(ctx) }

func (s *Set) readIssue(ctx context.Context, a *ReadIssueArgs) tool.Result {
	if msg, ok := s.ours(a.Repository); !ok {
		return s.failure(ReadIssueTool, a.Number, msg)
	}
	api, err := s.api(ctx)
	if err != nil {
		return s.providerFailure(ReadIssueTool, a.Number, "read issue", err)
	}
	issue, err := api.Issue(ctx, s.o.Repository, a.Number)
	if err != nil {
		return s.providerFailure(ReadIssueTool, a.Number, "read issue", err)
	}
	if issue.Repository == "" {
		issue.Repository = s.o.Repository
	}
	return s.success(issue.Number, issue.URL, IssueText(issue))
}

func (s *Set) readRequest(ctx context.Context, a *ReadRequestArgs) tool.Result {
	name := s.words.ReadRequestTool()
	if msg, ok := s.ours(a.Repository); !ok {
		return s.failure(name, a.Number, msg)
	}
	api, err := s.api(ctx)
	if err != nil {
		return s.providerFailure(name, a.Number, "read "+s.words.Request, err)
	}
	pr, err := api.PullRequest(ctx, s.o.Repository, a.Number)
	if err != nil {
		return s.providerFailure(name, a.Number, "read "+s.words.Request, err)
	}
	if pr.Repository == "" {
		pr.Repository = s.o.Repository
	}
	return s.success(pr.Number, pr.URL, PullRequestText(pr, s.words))
}

func (s *Set) createRequest(ctx context.Context, a *CreateRequestArgs) tool.Result {
	name := s.words.CreateRequestTool()
	if msg, ok := s.ours(a.Repository); !ok {
		return s.failure(name, 0, msg)
	}
	api, err := s.api(ctx)
	if err != nil {
		return s.providerFailure(name, 0, "open "+s.words.Request, err)
	}
	base := strings.TrimSpace(a.Base)
	if base == "" {
		repo, err := api.Repository(ctx, s.o.Repository)
		if err != nil {
			return s.providerFailure(name, 0, "read the default branch", err)
		}
		base = repo.DefaultBranch
	}
	pr, err := api.CreatePullRequest(ctx, s.o.Repository, gitprovider.NewPullRequest{
		Title: strings.TrimSpace(a.Title), Body: a.Body, Head: strings.TrimSpace(a.Head), Base: base, Draft: a.Draft,
	})
	if err != nil {
		return s.providerFailure(name, 0, "open "+s.words.Request, err)
	}
	if pr.Repository == "" {
		pr.Repository = s.o.Repository
	}
	text := CreatedText(pr, s.words)
	if s.o.Opened != nil {
		if err := s.o.Opened(context.WithoutCancel(ctx), pr.Number); err != nil {
			s.o.Logger.Error("record opened "+s.words.Request, "repository", s.o.Repository, "number", pr.Number, "err", err)
		}
	}
	return s.success(pr.Number, pr.URL, text)
}

func (s *Set) success(number int, url, text string) tool.Result {
	return tool.NewResult(text, false, Observation{Kind: Kind, Provider: s.o.Provider, Repository: s.o.Repository,
		Number: number, URL: url, Content: tool.Content(text)})
}

func (s *Set) failure(name string, number int, text string) tool.Result {
	return tool.NewResult(text, true, Observation{Kind: Kind, Provider: s.o.Provider, Repository: s.o.Repository,
		Number: number, Content: tool.Content(text), IsError: true})
}

// providerFailure words a failed provider call for the model: the provider's message (which
// names no token) where there is one, else only that the call failed; the cause goes to the
// log.
func (s *Set) providerFailure(name string, number int, what string, err error) tool.Result {
	var ge *gitprovider.Error
	var text string
	switch {
	case errors.As(err, &ge):
		text = fmt.Sprintf("Could not %s: %s", what, strings.TrimRight(ge.ClientMessage(), "."))
		if errors.Is(err, gitprovider.ErrUnavailable) {
			text += ". Try again later, or go on without it."
		} else {
			text += "."
		}
	default:
		text = fmt.Sprintf("Could not %s: the %s API could not be used; the server log has the cause.", what, s.words.Provider)
	}
	if !errors.Is(err, context.Canceled) {
		s.o.Logger.Warn("provider tool failed", "tool", name, "repository", s.o.Repository, "number", number, "err", err)
	}
	return s.failure(name, number, text)
}
