package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/agentd/agentd/internal/gitprovider"
	"github.com/agentd/agentd/internal/tool"
	"github.com/agentd/agentd/internal/tool/providertool"
	"github.com/agentd/agentd/internal/webhook"
)

// Providers reach the users' git providers with their stored tokens. *gitprovider.Service
// is one.
type Providers interface {
	// API returns the user's account at provider; a *gitprovider.Error of kind ErrNoToken
	// when they stored no token for it.
	API(ctx context.Context, userID, provider string) (gitprovider.API, error)
	// Remote finds where a repository lives: with provider "", at the first of the user's
	// providers whose token reaches it.
	Remote(ctx context.Context, userID, provider, repository string) (gitprovider.Remote, error)
}

// providerOf returns the provider of a conversation's repository and the repository's name
// as the provider writes it: the conversation's provider when it names one, else the first of
// the owner's whose token reaches the repository.
func (s *Service) providerOf(ctx context.Context, ownerID string, provider *string, repository string) (string, string, error) {
	if provider != nil && *provider != "" {
		return *provider, repository, nil
	}
	r, err := s.o.Providers.Remote(ctx, ownerID, "", repository)
	if err != nil {
		return "", "", err
	}
	return r.Provider, r.Repository, nil
}

// providerTools returns the git provider tools of a conversation: nil when it has no
// repository, or its owner no token for the repository's provider. Tool calls are made with
// the token stored when each call is made.
func (s *Service) providerTools(ctx context.Context, c Conversation) *providertool.Set {
	if s.o.Providers == nil || c.SelectedRepository == nil || strings.TrimSpace(*c.SelectedRepository) == "" {
		return nil
	}
	log := s.log.With("conversation_id", c.ID)
	provider, repo, err := s.providerOf(ctx, c.OwnerID, c.GitProvider, *c.SelectedRepository)
	var api gitprovider.API
	if err == nil {
		api, err = s.o.Providers.API(ctx, c.OwnerID, provider)
	}
	if err != nil {
		if !errors.Is(err, gitprovider.ErrNoToken) && ctx.Err() == nil {
			log.Info("the agent runs without the git provider's tools", "err", err)
		}
		return nil
	}
	set, err := providertool.New(providertool.Options{
		Provider: provider, Family: api.Family(), Repository: repo, Logger: log,
		API: func(ctx context.Context) (gitprovider.API, error) { return s.o.Providers.API(ctx, c.OwnerID, provider) },
		Opened: func(ctx context.Context, number int) error {
			if err := s.o.Store.AddPRNumber(ctx, c.OwnerID, c.ID, number, s.o.Now().UTC()); err != nil {
				return err
			}
			s.notify(ctx, webhook.KindPullRequestOpened, c, map[string]any{"provider": provider, "repository": repo, "number": number})
			return nil
		},
	})
	if err != nil {
		log.Info("the agent runs without the git provider's tools", "err", err)
		return nil
	}
	return set
}

// conversationTools runs a conversation's tools: the git provider's in the control plane,
// every other one (its MCP servers' included) in the sandbox.
type conversationTools struct {
	sandbox  *sandboxTools
	provider *providertool.Set // nil: none
	mcp      *mcpTools
}

func (t conversationTools) Run(ctx context.Context, name string, args json.RawMessage) (tool.Result, error) {
	if t.provider != nil {
		if _, ok := t.provider.Lookup(name); ok {
			return t.provider.Run(ctx, name, args)
		}
	}
	if res, ok, err := t.mcp.run(ctx, name, args); ok {
		return res, t.sandbox.unanswered(ctx, err)
	}
	res, err := t.sandbox.Run(ctx, name, args)
	return res, t.sandbox.unanswered(ctx, err)
}

// Interrupt stops the terminal command of a call the paused agent gave up on.
func (t conversationTools) Interrupt(ctx context.Context) (tool.Result, bool, error) {
	return t.sandbox.Interrupt(ctx)
}
